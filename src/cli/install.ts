import { chmodSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { renderConfigFile } from '../install/config-file'
import { renderUnit } from '../install/unit'
import { MIGRATE_SYSCTL } from '../edge/https'

const SYSCTL_FILE = '/etc/sysctl.d/60-berth.conf'
import { COMMON_OPTIONS, type Command } from './command'

export const installCommand: Command = {
  path: ['install'],
  summary: 'Lay out /etc/berth, /var/lib/berth, the binary and the systemd unit.',
  usage: 'berth install [--root DIR] [--no-binary] [--json]',
  description: [
    'Writes /etc/berth/berth.toml (only if absent: an existing config is never overwritten),',
    'creates /var/lib/berth (mode 0750), copies this executable to /usr/local/bin/berth and writes',
    '/etc/systemd/system/berth.service. Then: systemctl daemon-reload && systemctl enable --now berth.',
    'With --root every path is placed under DIR instead (for packaging and tests) and systemctl is not run.',
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
    const written: Record<string, string> = {}
    mkdirSync(at('/etc/berth'), { recursive: true, mode: 0o755 })
    mkdirSync(at('/var/lib/berth'), { recursive: true, mode: 0o750 })
    chmodSync(at('/var/lib/berth'), 0o750)
    mkdirSync(at('/etc/systemd/system'), { recursive: true })
    mkdirSync(at('/usr/local/bin'), { recursive: true })

    const configPath = at('/etc/berth/berth.toml')
    if (existsSync(configPath)) written.config = 'kept'
    else {
      writeFileSync(configPath, renderConfigFile({ 'server.data_dir': '/var/lib/berth', 'dns.listen': '0.0.0.0:53', 'tls.listen': '0.0.0.0:443' }), { mode: 0o640 })
      written.config = 'written'
    }
    writeFileSync(at('/etc/systemd/system/berth.service'), renderUnit('/usr/local/bin/berth'), { mode: 0o644 })
    written.unit = 'written'
    // A renewed certificate opens a new HTTPS listener beside the old one (SO_REUSEPORT); with this
    // the kernel hands the old one's queued connections to the new one instead of resetting them.
    mkdirSync(at('/etc/sysctl.d'), { recursive: true })
    writeFileSync(at(SYSCTL_FILE), `${MIGRATE_SYSCTL} = 1\n`, { mode: 0o644 })
    written.sysctl = 'written'

    const self = process.execPath
    if (ctx.values['no-binary'] === true) written.binary = 'skipped'
    else if (basename(self) === 'bun') written.binary = 'skipped (running under bun, not the compiled berth)'
    else if (self === at('/usr/local/bin/berth')) written.binary = 'already in place'
    else {
      copyFileSync(self, at('/usr/local/bin/berth'))
      chmodSync(at('/usr/local/bin/berth'), 0o755)
      written.binary = 'copied'
    }

    if (root === '/') {
      const sysctl = Bun.spawnSync(['sysctl', '-q', '-p', SYSCTL_FILE], { stderr: 'pipe' })
      if (sysctl.exitCode === 0) written.sysctl = 'written and applied'
      const reload = Bun.spawnSync(['systemctl', 'daemon-reload'], { stderr: 'pipe' })
      written.systemd = reload.exitCode === 0 ? 'reloaded' : 'not reloaded (systemctl unavailable)'
    }
    const result = {
      root,
      paths: {
        config: configPath,
        data_dir: at('/var/lib/berth'),
        unit: at('/etc/systemd/system/berth.service'),
        binary: at('/usr/local/bin/berth'),
      },
      actions: written,
      next: root === '/' ? 'systemctl enable --now berth' : null,
    }
    ctx.out.result(result, () => [
      `config   ${result.paths.config} (${written.config})`,
      `data     ${result.paths.data_dir}`,
      `unit     ${result.paths.unit}`,
      `binary   ${result.paths.binary} (${written.binary})`,
      ...(root === '/' ? ['', 'Next: edit /etc/berth/berth.toml, then systemctl enable --now berth'] : []),
    ].join('\n'))
    return 0
  },
}
