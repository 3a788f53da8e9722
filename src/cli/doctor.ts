import { ConfigError, unknownVariables, type Config } from '../config/config'
import { existsSync } from 'node:fs'
import { databasePath } from '../compose'
import { sitesDiskGbOf } from '../domain/room'
import { boxProbes } from '../drivers/host/probes'
import { openStore } from '../store/store'
import { COMMON_OPTIONS, STORE_OPTIONS, type Command } from './command'
import { configFrom } from './config-flags'
import type { CheckResult } from './doctor/check'
import { configFailed, configLoaded, runChecks } from './doctor/run'

export const doctorCommand: Command = {
  path: ['doctor'],
  summary: 'Check this box before and after going live: each check PASS, WARN or FAIL, with its fix.',
  usage: 'berth doctor [--config FILE] [--data-dir DIR] [--json]',
  description: [
    'Checks, in order: the config loads and every key is known; the data folder is writable and its',
    'disk has room over the reserve Berth keeps (disk.reserve_bytes, disk.reserve_percent), with the',
    "sites' plans' disk_gb summed against it; the Docker engine answers and is recent enough; the site",
    "images exist; the host has the tools and loop devices the sites' disks are made with; the ports",
    'of server.listen, tls.listen and dns.listen (TCP and UDP) are free or held',
    "by Berth; the ACME directory answers and the clock is within seconds of the CA's; sites.domain is",
    'delegated to this box; the systemd unit is installed and enabled; the off-box destination takes a',
    'test object.',
    'Exit status 0 when no check FAILs (WARNs allowed), 1 when one does. Run it as the user berth serve',
    'runs as (root). Every check and its fix: docs/operations.md, "Checking a box: berth doctor".',
  ].join('\n'),
  options: { ...STORE_OPTIONS, ...COMMON_OPTIONS },
  examples: ['berth doctor', 'berth doctor --json | jq \'.[] | select(.status != "PASS")\''],
  async run(ctx) {
    let config: Config
    let results: CheckResult[]
    try {
      config = configFrom(ctx)
      results = [configLoaded(config, unknownVariables(ctx.env)), ...(await runChecks(config, boxProbes(config), () => sitesDiskGbIn(config)))]
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err
      // The other checks read the config: with none that loads there is nothing more to check.
      results = [configFailed(err.message)]
    }
    ctx.out.result(results, () => renderResults(results))
    return results.some((r) => r.status === 'FAIL') ? 1 : 0
  },
}

/** The sum of the plans' disk_gb of the sites in the data folder's store; null when there is no store yet. */
function sitesDiskGbIn(config: Config): number | null {
  const path = databasePath(config)
  if (!existsSync(path)) return null
  const store = openStore(path)
  try {
    return sitesDiskGbOf(store)()
  } finally {
    store.close()
  }
}

/** One line per check, its fix beneath it, and a count. */
function renderResults(results: CheckResult[]): string {
  const width = Math.max(...results.map((r) => r.name.length)) + 2
  const lines = results.flatMap((r) => [
    `${r.status}  ${r.name.padEnd(width)}${r.detail}`,
    ...(r.fix ? [`${' '.repeat(6 + width)}fix: ${r.fix}`] : []),
  ])
  const count = (s: string) => results.filter((r) => r.status === s).length
  lines.push('', `${count('PASS')} passed, ${count('WARN')} warned, ${count('FAIL')} failed`)
  return lines.join('\n')
}
