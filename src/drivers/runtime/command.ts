import type Docker from 'dockerode'
import type { Duplex } from 'node:stream'
import { Demultiplexer, Tail } from './command-output'
import type { StartInSite } from './processes'
import { SITE_USER } from './site-container'
import { RuntimeUnavailableError, type CommandResult, type CommandSpec } from './types'

/**
 * Every process an exec starts carries this variable (its value one exec's own id), inherited by
 * all it starts, even what leaves the process group: the backstop below finds them by it.
 */
export const EXEC_MARK = 'BERTH_EXEC_ID'

/**
 * The wrapper the engine starts (as `sh -c WRAPPER berth-exec SECONDS ARGV...`); POSIX sh, the
 * same in busybox's ash (berth/static) and Debian's dash (berth/php).
 *
 * - The engine starts every exec as a session leader (runc's setsid); a child of it is not a
 *   group leader, so `setsid` there makes the command a session and process group of its own
 *   in place (no fork): its pid `$!` is its process group id.
 * - A job started with `&` gets /dev/null as its input before its redirections are applied, so
 *   the input is kept on fd 3 first and handed over with `<&3`.
 * - The watchdog is a group of its own too: `sleep` then `kill -KILL -GROUP` at the timeout,
 *   killing the command and everything it started that stayed in its group. When the command
 *   ends first, the wrapper kills the watchdog's group (the shell and its sleep): nothing is left.
 * - `wait ... 2>/dev/null`: the shell reports a killed job ("Killed") on its stderr otherwise,
 *   which would end up in the command's stderr.
 * The wrapper exits with the command's code; 137 (128 + 9) when it was killed.
 */
const WRAPPER = `t=$1; shift
exec 3<&0 0</dev/null
setsid "$@" <&3 3<&- &
c=$!
exec 3<&-
setsid sh -c 'sleep "$1"; kill -s KILL -- "-$2"' watchdog "$t" "$c" >/dev/null 2>&1 &
w=$!
wait "$c" 2>/dev/null; code=$?
kill -s KILL -- "-$w" "$w" 2>/dev/null
exit "$code"`

/**
 * Kills every process of the container that carries `EXEC_MARK=$1` in its environment (as the
 * site user, who owns them all): what escaped the process group, or a command that killed its
 * own watchdog. Its own processes are not marked. (busybox's grep misses text after a NUL: the
 * variables are split into lines first.)
 */
const KILL_MARKED = `for e in /proc/[0-9]*/environ; do
  if tr '\\0' '\\n' < "$e" 2>/dev/null | grep -qxF "${EXEC_MARK}=$1"; then p=\${e#/proc/}; kill -s KILL "\${p%/environ}" 2>/dev/null; fi
done; exit 0`

/**
 * How long after the timeout the host stops waiting for the stream to end by itself. The
 * watchdog's kill ends it within milliseconds; it does not end when something the command
 * started left its process group (setsid, a daemon) and holds the output open, or when the
 * command killed its watchdog (both run as the site user).
 */
const BACKSTOP_GRACE_MS = 2_000
/** How long the backstop's kill may take before the answer goes out anyway. */
const BACKSTOP_KILL_MS = 5_000
/** Exit code of a process killed by SIGKILL, as a shell reports it. */
const KILLED = 137

/** ContainerRuntime.runCommand over `start` (contract in ./types.ts). */
export async function runCommand(start: StartInSite, slug: string, spec: CommandSpec): Promise<CommandResult> {
  const id = crypto.randomUUID()
  const env = { ...spec.env, [EXEC_MARK]: id }
  const options: Docker.ExecCreateOptions = {
    Cmd: ['sh', '-c', WRAPPER, 'berth-exec', String(spec.timeoutMs / 1000), ...spec.argv],
    User: SITE_USER,
    WorkingDir: spec.cwd,
    Env: Object.entries(env).map(([name, value]) => `${name}=${value}`),
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  }
  const out = { stdout: new Tail(spec.keepBytes), stderr: new Tail(spec.keepBytes) }
  let startedAt = 0
  const { run, ended, drop } = await start(slug, options, ({ run, stream }) => {
    startedAt = performance.now()
    return { run, ended: follow(stream, new Demultiplexer(out), spec.stdin), drop: () => (stream as unknown as Duplex).destroy() }
  })
  let backstop: ReturnType<typeof setTimeout> | undefined
  const overdue = new Promise<'overdue'>((resolve) => {
    backstop = setTimeout(() => resolve('overdue'), Math.max(0, spec.timeoutMs + BACKSTOP_GRACE_MS - (performance.now() - startedAt)))
  })
  let outcome: 'ended' | 'overdue'
  try {
    outcome = await Promise.race([ended.then(() => 'ended' as const), overdue])
  } finally {
    clearTimeout(backstop)
  }
  if (outcome === 'overdue') {
    await killMarked(start, slug, id)
    drop()
  }
  const durationMs = Math.round(performance.now() - startedAt)
  const exitCode = outcome === 'overdue' ? KILLED : ((await run.inspect()).ExitCode ?? -1)
  return {
    exitCode,
    stdout: out.stdout.bytes(),
    stderr: out.stderr.bytes(),
    truncated: out.stdout.truncated || out.stderr.truncated,
    // Killed by the watchdog: 137 once the timeout has passed (measured from before the start,
    // so never shorter than the watchdog's own sleep).
    timedOut: outcome === 'overdue' || (exitCode === KILLED && durationMs >= spec.timeoutMs),
    durationMs,
  }
}

/**
 * Feeds the stream's output to `demux`, writes `stdin` and closes the input (a half-close of the
 * hijacked connection: the engine closes the process's stdin, and `cat` sees its end; with no
 * input, at once). Resolves when the engine ends the stream: the command and everything holding
 * its output are gone.
 */
function follow(stream: NodeJS.ReadWriteStream, demux: Demultiplexer, stdin: CommandSpec['stdin']): Promise<void> {
  const ended = new Promise<void>((resolve, reject) => {
    stream.on('data', (chunk: Uint8Array) => demux.push(chunk))
    stream.on('end', resolve)
    stream.on('close', resolve)
    stream.on('error', (err: Error) => reject(new RuntimeUnavailableError(`The engine's stream of a command broke: ${err.message}`)))
  })
  // Awaited once the start is confirmed; an error before then is not "unhandled".
  ended.catch(() => {})
  if (stdin === undefined || stdin instanceof Uint8Array) {
    if (stdin && stdin.length > 0) stream.write(stdin)
    stream.end()
  } else {
    void feed(stream, stdin, ended)
  }
  return ended
}

/**
 * Writes a streamed input (an archive on its way into a release) as the engine takes it: each
 * chunk waits for the connection to drain, so no more than a chunk or two is held in memory. Stops
 * when the command ends first (it exited without reading it all); closes the input at the end.
 */
async function feed(stream: NodeJS.ReadWriteStream, chunks: AsyncIterable<Uint8Array>, ended: Promise<void>): Promise<void> {
  let over = false
  const stop = ended.then(() => { over = true }, () => { over = true })
  try {
    for await (const chunk of chunks) {
      if (over) break
      if (!stream.write(chunk)) await Promise.race([new Promise((resolve) => stream.once('drain', resolve)), stop])
    }
  } catch {
    // The input failed (its file went away): the command sees its input end early, and says so.
  } finally {
    if (!over) stream.end()
  }
}

/** The backstop's kill of every process marked with `id`; bounded, and quiet when it fails. */
async function killMarked(start: StartInSite, slug: string, id: string): Promise<void> {
  const options = { Cmd: ['sh', '-c', KILL_MARKED, 'berth-exec-kill', id], User: SITE_USER, AttachStdout: true, AttachStderr: true, Tty: false }
  try {
    const done = await start(slug, options, ({ stream }) => new Promise<void>((resolve) => {
      stream.on('end', resolve)
      stream.on('close', resolve)
      stream.on('error', () => resolve())
      stream.resume()
    }))
    await Promise.race([done, Bun.sleep(BACKSTOP_KILL_MS)])
  } catch {
    // The site stopped meanwhile, or the engine is down: its processes went with it, or will.
  }
}
