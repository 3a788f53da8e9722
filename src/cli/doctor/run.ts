import type { Config } from '../../config/config'
import type { BoxProbes } from '../../drivers/host/types'
import { checkDataFolder, checkDisk, checkEngine, checkImages, checkSiteDisks, checkPort, checkUnit, listenersOf } from './box-checks'
import { fail, pass, reasonOf, warn, type CheckResult } from './check'
import { askDirectory, checkAcme, checkClock, checkDelegation, checkOffsite } from './net-checks'

/**
 * The config check when the config loads, which goes first: the rest need it. A `BERTH_*`
 * variable that names no key WARNs (the loader passes over it, so a misspelt one changes nothing).
 */
export function configLoaded(config: Config, unknownVariables: string[]): CheckResult {
  const source = config.configFile ?? 'no config file (defaults and BERTH_* variables)'
  if (unknownVariables.length > 0) {
    return warn('config', `${source} loads, but ${unknownVariables.join(', ')} ${unknownVariables.length === 1 ? 'names' : 'name'} no key Berth reads`,
      'unset it or correct its name: BERTH_<SECTION>_<KEY> of a key in docs/configuration.md')
  }
  return pass('config', `${source} loads; every key is known`)
}

/** The config check's FAIL: its message names the key (an unknown one included) and its source. */
export function configFailed(message: string): CheckResult {
  const fix = /unknown key/.test(message)
    ? 'remove the key or correct its name: docs/configuration.md lists every key, in its section'
    : 'correct the value as the message says (docs/configuration.md)'
  return fail('config', message, fix)
}

/**
 * Every check after the config's, in the order a hoster fixes them: the box, the engine, the
 * ports, then what lies outside. They run at once; one that throws FAILs with its message.
 */
export async function runChecks(config: Config, probes: BoxProbes, sitesDiskGb: () => number | null = () => null): Promise<CheckResult[]> {
  const directory = askDirectory(config, probes)
  const checks: [name: string, run: () => CheckResult | Promise<CheckResult>][] = [
    ['data_dir', () => checkDataFolder(config, probes)],
    ['disk', () => checkDisk(config, probes, sitesDiskGb())],
    ['engine', () => checkEngine(config, probes)],
    ['images', () => checkImages(config, probes)],
    ['site_disks', () => checkSiteDisks(probes)],
    ...listenersOf(config).map((l) => [`port ${l.hostname}:${l.port}/${l.protocol}`, () => checkPort(l, probes)] as [string, () => Promise<CheckResult>]),
    ['acme', async () => checkAcme(config, await directory)],
    ['clock', async () => checkClock(config, await directory)],
    ['delegation', () => checkDelegation(config, probes)],
    ['systemd_unit', () => checkUnit(probes)],
    ['offsite', () => checkOffsite(config, probes)],
  ]
  return Promise.all(checks.map(async ([name, run]) => {
    try {
      return await run()
    } catch (err) {
      return fail(name, `the check itself failed: ${reasonOf(err)}`, 'run berth doctor again; report it if it stays')
    }
  }))
}
