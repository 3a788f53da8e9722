import { existsSync } from 'node:fs'
import { basename, join } from 'node:path'
import { loadConfig } from '../config/config'
import { selectFirewall } from '../drivers/firewall/select'
import { MIGRATE_SYSCTL } from '../edge/https'
import { renderConfigFile } from '../install/config-file'
import { PRODUCTION_ADDRESSES, renderSocketUnit, renderUnit, type SocketAddresses } from '../install/unit'
import { InstallError, writeAllOrNothing, type PlannedFile } from '../install/write-all'
import { COMMON_OPTIONS, type Command } from './command'

const SYSCTL_FILE = '/etc/sysctl.d/60-berth.conf'
/** The keys a new config sets; every other key is written commented out, with its default. */
const NEW_CONFIG = { 'server.data_dir': '/var/lib/berth', 'dns.listen': '0.0.0.0:53', 'tls.listen': '0.0.0.0:443' }

export const installCommand: Command = {
  path: ['install'],
  summary: 'Lay out /etc/berth, /var/lib/berth, the binary, the systemd units, a sysctl setting and the site firewall.',
  usage: 'berth install [--root DIR] [--no-binary] [--json]',
  description: [
    'Writes /etc/berth/berth.toml (only if absent: an existing config is never overwritten; a new one',
    'sets data_dir, dns.listen 0.0.0.0:53 and tls.listen 0.0.0.0:443), creates /var/lib/berth (mode',
    '0750), copies this executable to /usr/local/bin/berth, writes /etc/systemd/system/berth.service',
    'and berth.socket (the config\'s listen addresses, held by systemd while Berth restarts: run',
    'berth install again after changing one),',
    `and ${SYSCTL_FILE} (${MIGRATE_SYSCTL} = 1: a renewed certificate's HTTPS listener takes over`,
    'the old one\'s queued connections), then runs sysctl -p on that file and systemctl daemon-reload,',
    'and puts the site firewall in place (berth firewall apply; containers.firewall).',
    'Everything is checked and written beside its target first, then renamed into place: on failure',
    'nothing is changed, and the binary is replaced even while the service runs (systemctl restart',
    'berth then starts the new one). Next: systemctl enable --now berth.',
    'With --root every path is placed under DIR instead (for packaging and tests) and neither sysctl,',
    'systemctl nor the firewall is touched.',
  ].join('\n'),
  options: {
    root: { type: 'string', value: 'DIR', help: 'Install under DIR instead of / (default /).' },
    'no-binary': { type: 'boolean', help: 'Do not copy this executable to /usr/local/bin/berth.' },
    ...COMMON_OPTIONS,
  },
  examples: ['sudo ./berth install && sudo systemctl enable --now berth', 'berth install --root /tmp/pkgroot --json'],
  async run(ctx) {
    const root = (ctx.values.root as string | undefined) ?? '/'
    const at = (p: string) => join(root, p)
    const paths = {
      config: at('/etc/berth/berth.toml'),
      data_dir: at('/var/lib/berth'),
      unit: at('/etc/systemd/system/berth.service'),
      socket: at('/etc/systemd/system/berth.socket'),
      binary: at('/usr/local/bin/berth'),
      sysctl: at(SYSCTL_FILE),
    }
    const actions: Record<string, string> = {}
    const files: PlannedFile[] = []

    if (existsSync(paths.config)) actions.config = 'kept'
    else {
      files.push({ path: paths.config, mode: 0o640, content: renderConfigFile(NEW_CONFIG) })
      actions.config = 'written'
    }
    files.push({ path: paths.unit, mode: 0o644, content: renderUnit('/usr/local/bin/berth') })
    actions.unit = 'written'
    // The sockets systemd holds across restarts, at the config's listen addresses.
    const addresses = socketAddressesOf(paths.config, ctx.env)
    if (typeof addresses === 'string') {
      ctx.out.error(addresses)
      return 1
    }
    files.push({ path: paths.socket, mode: 0o644, content: renderSocketUnit(addresses) })
    actions.socket = 'written'
    // A renewed certificate opens a new HTTPS listener beside the old one (SO_REUSEPORT); with this
    // the kernel hands the old one's queued connections to the new one instead of resetting them.
    files.push({ path: paths.sysctl, mode: 0o644, content: `${MIGRATE_SYSCTL} = 1\n` })
    actions.sysctl = 'written'
    const self = process.execPath
    if (ctx.values['no-binary'] === true) actions.binary = 'skipped'
    else if (basename(self) === 'bun') actions.binary = 'skipped (running under bun, not the compiled berth)'
    else if (self === paths.binary) actions.binary = 'already in place'
    else {
      files.push({ path: paths.binary, mode: 0o755, content: { copyOf: self } })
      actions.binary = 'copied'
    }

    try {
      writeAllOrNothing([
        { path: at('/etc/berth'), mode: 0o755 },
        { path: paths.data_dir, mode: 0o750, enforceMode: true },
        { path: at('/etc/systemd/system'), mode: 0o755 },
        { path: at('/etc/sysctl.d'), mode: 0o755 },
        { path: at('/usr/local/bin'), mode: 0o755 },
      ], files)
    } catch (err) {
      if (err instanceof InstallError) {
        ctx.out.error(err.message)
        return 1
      }
      throw err
    }

    if (root === '/') {
      actions.sysctl = applySysctl(paths.sysctl)
      const reload = run(['systemctl', 'daemon-reload'])
      actions.systemd = reload === null ? 'reloaded' : `not reloaded (${reload}); run systemctl daemon-reload`
      actions.firewall = await applyFirewall(paths.config, ctx.env)
    }
    const result = { root, paths, actions, next: root === '/' ? 'systemctl enable --now berth' : null }
    ctx.out.result(result, () => [
      `config   ${paths.config} (${actions.config})`,
      `data     ${paths.data_dir}`,
      `unit     ${paths.unit} (${actions.unit}${actions.systemd ? `; systemd ${actions.systemd}` : ''})`,
      `sockets  ${paths.socket} (${actions.socket}: held across restarts)`,
      `sysctl   ${paths.sysctl}: ${MIGRATE_SYSCTL} = 1 (${actions.sysctl})`,
      `binary   ${paths.binary} (${actions.binary})`,
      ...(actions.firewall ? [`firewall sites kept off the host and link-local addresses: ${actions.firewall}`] : []),
      ...(root === '/' ? ['', 'Next: edit /etc/berth/berth.toml, then systemctl enable --now berth', '(upgrading a running Berth: systemctl restart berth)'] : []),
    ].join('\n'))
    return 0
  },
}

/**
 * The listen addresses berth.socket holds: the existing config's (with $BERTH_* overrides), or a
 * new config's. A message (nothing is changed) when the existing config does not load.
 */
function socketAddressesOf(configFile: string, env: Record<string, string | undefined>): SocketAddresses | string {
  if (!existsSync(configFile)) return PRODUCTION_ADDRESSES
  try {
    const config = loadConfig({ file: configFile, env })
    return { http: config.server.listen, https: config.tls.listen, dns: config.dns.listen }
  } catch (err) {
    return `${configFile} does not load (${(err as Error).message}); fix it and run berth install again (nothing was changed).`
  }
}

/**
 * The site firewall of the installed config (drivers/firewall), put in place now so that sites are
 * kept off the host from their first start; berth serve checks it again at each start. What
 * happened, for the output: a failure is reported, never fatal.
 */
async function applyFirewall(configFile: string, env: Record<string, string | undefined>): Promise<string> {
  try {
    const firewall = selectFirewall(loadConfig({ file: configFile, env }))
    if (!firewall) return 'off (containers.firewall = false)'
    const before = await firewall.ensure()
    const what = before.state === 'in_place' ? 'already in place' : before.state === 'missing' ? 'installed' : 'replaced'
    return `${what} (${firewall.tool}, pool ${firewall.policy.pool})`
  } catch (err) {
    return `not set: ${(err as Error).message}; berth serve tries again at start`
  }
}

/** `sysctl -p` on the file just written: what happened, for the output. */
function applySysctl(file: string): string {
  const failed = run(['sysctl', '-q', '-p', file])
  return failed === null ? 'written and applied' : `written, not applied: ${failed}`
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
