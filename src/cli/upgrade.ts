import { existsSync, statSync } from 'node:fs'
import { InstallError, writeAllOrNothing } from '../install/write-all'
import { VERSION } from '../version'
import { COMMON_OPTIONS, UsageError, type Command } from './command'

const INSTALLED = '/usr/local/bin/berth'
/** How long the new binary may take to print its version. */
const VERSION_TIMEOUT_MS = 15_000

export const upgradeCommand: Command = {
  path: ['upgrade'],
  summary: 'Replace the installed binary with FILE (checked first) and restart Berth without dropping a request.',
  usage: 'berth upgrade FILE [--binary PATH] [--no-restart] [--json]',
  description: [
    'Runs `FILE version` first: a file that is no Berth for this machine (another architecture, a',
    'truncated download) changes nothing. Then copies it beside the installed binary and renames it',
    'over it (atomic: a crash leaves the old or the new one, never half of one; the running process',
    'keeps its own), and runs systemctl restart berth. systemd holds the listening sockets',
    '(berth.socket) while the old process finishes its requests and the new one starts: no',
    'connection is refused and no request is lost; the new one migrates the store at start.',
    'Returns when the new process serves (Type=notify: systemd waits for its READY=1).',
  ].join('\n'),
  options: {
    binary: { type: 'string', value: 'PATH', help: `The installed binary to replace (default ${INSTALLED}, the unit's ExecStart).` },
    'no-restart': { type: 'boolean', help: 'Replace the binary only; the next systemctl restart berth starts it.' },
    ...COMMON_OPTIONS,
  },
  examples: ['sudo berth upgrade ./berth-linux-x64', 'sudo berth upgrade /tmp/berth --no-restart'],
  async run(ctx) {
    const file = ctx.positionals[0]
    if (!file || ctx.positionals.length > 1) throw new UsageError('give exactly one FILE: the new berth binary')
    const target = (ctx.values.binary as string | undefined) ?? INSTALLED
    if (!existsSync(file) || !statSync(file).isFile()) {
      ctx.out.error(`${file} is not a file; nothing was changed.`)
      return 1
    }
    const checked = newVersionOf(file)
    if ('error' in checked) {
      ctx.out.error(`${file} does not run as berth (${checked.error}); nothing was changed.`)
      return 1
    }
    try {
      writeAllOrNothing([], [{ path: target, mode: 0o755, content: { copyOf: file } }])
    } catch (err) {
      if (err instanceof InstallError) {
        ctx.out.error(err.message)
        return 1
      }
      throw err
    }
    const restart = ctx.values['no-restart'] === true ? 'skipped (--no-restart): run systemctl restart berth' : restartService()
    const result = { binary: target, from: VERSION, to: checked.version, schema: checked.schema, restart }
    ctx.out.result(result, () => [
      `binary   ${target}: berth ${VERSION} -> ${checked.version} (schema ${checked.schema ?? 'none'})`,
      `restart  ${restart}`,
    ].join('\n'))
    return restart.startsWith('failed') ? 1 : 0
  },
}

/** What `file version --json` says, or why it did not run. */
function newVersionOf(file: string): { version: string; schema: string | null } | { error: string } {
  try {
    const p = Bun.spawnSync([file, 'version', '--json'], { stdout: 'pipe', stderr: 'pipe', timeout: VERSION_TIMEOUT_MS })
    if (p.exitCode !== 0) return { error: p.stderr.toString().trim().split('\n')[0] || `berth version exited with status ${p.exitCode ?? p.signalCode}` }
    const info = JSON.parse(p.stdout.toString()) as { version?: unknown; schema?: unknown }
    if (typeof info.version !== 'string') return { error: 'berth version printed no version' }
    return { version: info.version, schema: typeof info.schema === 'string' ? info.schema : null }
  } catch (err) {
    return { error: (err as Error).message.split('\n')[0]! }
  }
}

/** systemctl restart berth when it runs; what happened, for the output. */
function restartService(): string {
  const active = run(['systemctl', 'is-active', '--quiet', 'berth'])
  if (active !== null) return 'berth.service is not running: start it with systemctl start berth'
  const failed = run(['systemctl', 'restart', 'berth'])
  return failed === null ? 'done (systemctl restart berth; the new process serves)' : `failed: ${failed}; see journalctl -u berth`
}

/** Runs a command; null when it exits 0, else why it failed (one line). */
function run(argv: string[]): string | null {
  try {
    const p = Bun.spawnSync(argv, { stdout: 'ignore', stderr: 'pipe' })
    if (p.exitCode === 0) return null
    return p.stderr.toString().trim().split('\n')[0] || `${argv[0]} exited with status ${p.exitCode}`
  } catch {
    return `${argv[0]} not found`
  }
}
