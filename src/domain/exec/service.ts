import { FileError } from '../../drivers/files/errors'
import { SITE_OWNER, type FileOwner, type Home, type OpenHome } from '../../drivers/files/types'
import { SITE_HOME, SiteNotRunnableError, SiteRestartingError, type CommandResult, type ContainerRuntime } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import { type AuditActor, type AuditTrail, commandLineOf } from '../audit'
import { invalid, op, OverBudgetError, say, tooLarge } from '../errors'
import { EXEC_LIMITS } from './limits'
import type { ExecResult } from './views'

/** What a caller asks to run (the body of `POST /sites/{tenant_slug}/exec/`). */
export interface ExecInput {
  /** An argv (`["php", "-v"]`), or one string run by `sh -c`. */
  command: string | string[]
  /** The folder to start in, inside the home; default the home. */
  cwd?: string
  env?: Record<string, string>
  stdin?: string
  timeout_seconds?: number
}

/** POSIX's portable variable names. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** Berth's own variables in a site's container (BERTH_EXEC_ID, BERTH_SSH): not the caller's to set. */
const RESERVED_ENV = /^BERTH_/

/**
 * The exec API: one command in a site's running container, as the site user (uid 1000, never
 * root), answered with its exit code and output once it ends (drivers/runtime/command.ts runs
 * it). Limits in ./limits.ts; every refusal names its field.
 *
 * - The site comes from the SiteGuard: the caller's and changeable (409 otherwise); a container
 *   that is not running answers 409 as every operation on the container does (asDomainError).
 * - `cwd` is resolved beneath the home as the files API resolves paths (no `..`, no symbolic link
 *   anywhere on the way, an existing folder), on the host, through OpenHome.
 * - At most `EXEC_LIMITS.perSite` run at once per site; one more is refused with 429 and
 *   Retry-After (over_budget), before anything starts.
 * - Every exec is in the audit trail: begun with its command line and the key, ended with its exit
 *   code, 'timed out', or why it did not run.
 * - Its processes run in the site's container, in its cgroup: they count against the plan's CPU,
 *   memory and process limits like any other process of the site (a busy exec slows the site's
 *   web server down, and the site's limits bound it).
 */
export class ExecService {
  /** Deadlines (ms, monotonic) of the execs running now, by site id. */
  private running = new Map<string, number[]>()

  constructor(
    private runtime: Pick<ContainerRuntime, 'homePath' | 'runCommand'>,
    /** Opens a site's home on the host (drivers/files/home.ts). */
    private openHome: OpenHome,
    private audit: AuditTrail,
    private owner: FileOwner = SITE_OWNER,
    /**
     * The site's own variables (issue 39: its settings and secrets; the caller's `env` wins) and
     * the argv as it starts in the site (an app site's through berth-env, its runtimes on PATH).
     */
    private app: { env(siteId: string): Record<string, string>; argv(site: SiteRow, argv: string[]): string[] } = { env: () => ({}), argv: (_site, argv) => argv },
  ) {}

  async run(site: SiteRow, actor: AuditActor, input: ExecInput): Promise<ExecResult> {
    const argv = argvOf(input.command, site.slug)
    const env = envOf(input.env ?? {})
    const stdin = stdinOf(input.stdin, site.slug)
    const timeoutSeconds = timeoutOf(input.timeout_seconds)
    const cwd = await this.cwdOf(site.slug, input.cwd ?? '')
    const release = this.claim(site, timeoutSeconds)
    const record = this.audit.begin({ siteId: site.id, kind: 'exec', actor, command: typeof input.command === 'string' ? input.command : commandLineOf(argv) })
    try {
      const result = await this.runtime.runCommand(site.slug, { argv: this.app.argv(site, argv), cwd, env: { ...this.app.env(site.id), ...env }, stdin, timeoutMs: timeoutSeconds * 1000, keepBytes: EXEC_LIMITS.keepBytes })
      record.end(result.timedOut ? { exitCode: result.exitCode, reason: 'timed out' } : { exitCode: result.exitCode })
      return viewOf(result)
    } catch (err) {
      record.end({ exitCode: null, reason: err instanceof SiteRestartingError ? 'site restarting' : err instanceof SiteNotRunnableError ? 'site not running' : 'not run: engine error' })
      throw err
    } finally {
      release()
    }
  }

  /** Takes one of the site's exec slots until the returned function is called; 429 when none is free. */
  private claim(site: SiteRow, timeoutSeconds: number): () => void {
    const now = performance.now()
    const deadlines = this.running.get(site.id) ?? []
    if (deadlines.length >= EXEC_LIMITS.perSite) {
      const wait = Math.ceil((Math.min(...deadlines) - now) / 1000)
      const retry = Math.max(1, Math.min(EXEC_LIMITS.retryAfterSeconds, wait))
      throw new OverBudgetError(`Site '${site.slug}' already runs ${deadlines.length} commands, the most it runs at once; wait for one to end and retry in ${retry} seconds.`, retry)
    }
    const deadline = now + timeoutSeconds * 1000
    deadlines.push(deadline)
    this.running.set(site.id, deadlines)
    return () => {
      deadlines.splice(deadlines.indexOf(deadline), 1)
      if (deadlines.length === 0) this.running.delete(site.id)
    }
  }

  /** The absolute folder in the container that `cwd` names beneath the home; invalid (cwd) otherwise. */
  private async cwdOf(slug: string, cwd: string): Promise<string> {
    wellFormed(cwd, 'cwd')
    let relative = cwd
    if (cwd.startsWith('/')) {
      if (cwd !== SITE_HOME && !cwd.startsWith(`${SITE_HOME}/`)) {
        throw invalid('cwd', `cwd '${preview(cwd)}' is outside the site's home; send a folder inside it, relative to the home (public) or absolute beneath ${SITE_HOME} (${SITE_HOME}/public), or leave cwd out for the home itself.`)
      }
      relative = cwd.slice(SITE_HOME.length + 1)
    }
    if (relative === '') return SITE_HOME
    const dir = await this.runtime.homePath(slug)
    let home: Home
    try {
      home = await this.openHome(dir, this.owner)
    } catch {
      throw new SiteNotRunnableError(`The files of site '${slug}' are not available right now.`)
    }
    try {
      const folder = await home.folder(relative)
      return folder === '' ? SITE_HOME : `${SITE_HOME}/${folder}`
    } catch (err) {
      if (!(err instanceof FileError)) throw err
      const why = err.message.replace(/\.$/, '')
      throw invalid('cwd', say`cwd: ${why}; send an existing folder of the site's home, relative to it (public) or absolute beneath ${SITE_HOME}, with no '..' and no symbolic link on the way (${op('listFiles', { tenant_slug: slug })} lists its folders), or leave cwd out for the home itself.`)
    } finally {
      home.close()
    }
  }
}

/** The argv to run: the array as sent, or a string as `sh -c STRING`. */
function argvOf(command: string | string[], slug: string): string[] {
  const items = typeof command === 'string' ? [command] : command
  if (typeof command === 'string' && command.trim() === '') throw invalid('command', 'command is empty; send a command line such as "php -v", or an argv such as ["php", "-v"].')
  if (items.length === 0) throw invalid('command', 'command is an empty array; send an argv such as ["php", "-v"], or a command line as one string.')
  if (items.length > EXEC_LIMITS.argvItems) throw invalid('command', `command has ${items.length} items; an argv takes at most ${EXEC_LIMITS.argvItems}.`)
  if (items[0] === '') throw invalid('command', 'command[0] is empty; it names the program to run, such as "php".')
  let bytes = 0
  for (const [i, item] of items.entries()) {
    const field = typeof command === 'string' ? 'command' : `command[${i}]`
    wellFormed(item, field, 'command')
    if (item.includes('\0')) throw invalid('command', `${field} holds a NUL character, which no program can receive in its arguments; remove it.`)
    bytes += Buffer.byteLength(item, 'utf8')
  }
  if (bytes > EXEC_LIMITS.commandBytes) {
    throw invalid('command', say`command is ${bytes} bytes in UTF-8; it takes at most ${EXEC_LIMITS.commandBytes}. Pass large data as stdin, or write it to a file (${op('writeFile', { tenant_slug: slug })}) and name the file.`)
  }
  return typeof command === 'string' ? ['sh', '-c', command] : command
}

function envOf(env: Record<string, string>): Record<string, string> {
  const entries = Object.entries(env)
  if (entries.length > EXEC_LIMITS.envCount) throw invalid('env', `env has ${entries.length} variables; it takes at most ${EXEC_LIMITS.envCount}.`)
  let bytes = 0
  for (const [name, value] of entries) {
    if (!ENV_NAME.test(name) || Buffer.byteLength(name) > EXEC_LIMITS.envNameBytes) {
      throw invalid('env', `env has the name '${preview(name)}'; names are letters, digits and _ (not starting with a digit), at most ${EXEC_LIMITS.envNameBytes} bytes, such as APP_ENV.`)
    }
    if (RESERVED_ENV.test(name)) throw invalid('env', `env sets ${name}; names starting with BERTH_ are Berth's own in the site's container. Choose another name.`)
    if (typeof value !== 'string') throw invalid('env', `env.${name} must be a string.`)
    wellFormed(value, `env.${name}`, 'env')
    if (value.includes('\0')) throw invalid('env', `env.${name} holds a NUL character, which a variable cannot carry; remove it.`)
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value, 'utf8')
  }
  if (bytes > EXEC_LIMITS.envBytes) throw invalid('env', `env is ${bytes} bytes (names and values, UTF-8); it takes at most ${EXEC_LIMITS.envBytes}.`)
  return env
}

function stdinOf(stdin: string | undefined, slug: string): Uint8Array | undefined {
  if (stdin === undefined || stdin === '') return undefined
  wellFormed(stdin, 'stdin')
  const bytes = Buffer.from(stdin, 'utf8')
  if (bytes.length > EXEC_LIMITS.stdinBytes) {
    throw tooLarge(say`stdin is ${bytes.length} bytes in UTF-8; it takes at most ${EXEC_LIMITS.stdinBytes}. Upload larger input as a file (${op('uploadFile', { tenant_slug: slug })}) and read it from there.`, 'stdin')
  }
  return bytes
}

function timeoutOf(seconds: number | undefined): number {
  const { minimum, maximum, default: fallback } = EXEC_LIMITS.timeoutSeconds
  if (seconds === undefined) return fallback
  if (!Number.isInteger(seconds) || seconds < minimum || seconds > maximum) throw invalid('timeout_seconds', `timeout_seconds must be a whole number from ${minimum} to ${maximum}; leave it out for ${fallback}.`)
  return seconds
}

/** Text that UTF-8 can carry: an unpaired surrogate (`\ud800` in JSON) cannot reach a process as sent. */
function wellFormed(value: string, label: string, param = label): void {
  if (!value.isWellFormed()) throw invalid(param, `${label} has an unpaired surrogate (such as \\ud800 in JSON), which UTF-8 cannot carry; send well-formed Unicode text.`)
}

const preview = (text: string) => (text.length > 60 ? `${text.slice(0, 57)}...` : text)

/** Output as text; a tail cut inside a UTF-8 character starts after it rather than with U+FFFD. */
const DECODER = new TextDecoder('utf-8')
function textOf(bytes: Uint8Array, truncated: boolean): string {
  let start = 0
  // UTF-8 continuation bytes are 10xxxxxx; a character has at most three.
  if (truncated) while (start < 3 && start < bytes.length && (bytes[start]! & 0xc0) === 0x80) start++
  return DECODER.decode(bytes.subarray(start))
}

function viewOf(r: CommandResult): ExecResult {
  return {
    exit_code: r.exitCode,
    stdout: textOf(r.stdout, r.truncated),
    stderr: textOf(r.stderr, r.truncated),
    truncated: r.truncated,
    duration_ms: r.durationMs,
    timed_out: r.timedOut,
  }
}
