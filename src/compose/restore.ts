/**
 * `berth restore`: the two halves of domain/offsite (restore.ts, restore-sites.ts) with the
 * drivers they are handed. The first half works before there is a store; the second on the
 * areas `berth serve` builds (compose/areas.ts) from the store it put back, with no listener,
 * job runner or background pass started.
 */
import { join } from 'node:path'
import type { Config } from '../config/config'
import { BoxRestore, SitesReturn } from '../domain/offsite'
import { gnuTar } from '../drivers/archives/home-tar'
import { LocalArchiveStore } from '../drivers/archives/local'
import { LocalWorkFolder } from '../drivers/archives/work-folder'
import { open, openBytes } from '../drivers/offsite/age'
import { LocalLanding } from '../drivers/offsite/landing'
import { selectOffsite } from '../drivers/offsite/select'
import { systemClock } from '../lib/clock'
import { migrate } from '../store/migrate'
import { openStore } from '../store/store'
import type { SiteRunner } from '../domain/sites'
import type { ContainerRuntime } from '../drivers/runtime/types'
import type { ArchiveStore } from '../drivers/archives/types'
import type { ArchiveDumps } from '../domain/archives'
import type { Logger } from '../lib/logger'
import type { SharedRepositories } from './core'
import { databasePath, secretsKeyPath } from './installation'

/** The archive jobs' work folder: on the archive store's disk, so a landed archive is renamed into place. */
const workDirOf = (config: Config) => join(config.archives.dir, '.work')

/**
 * The first half for `from` (`s3://...` or `file:///...`; credentials and endpoint from the
 * config's offsite section), the hoster's age identities, and whose signatures are accepted.
 */
export function buildBoxRestore(config: Config, opts: { from: string; identities: string[]; trust: { publicKey: string | null; acceptUnsigned: boolean } }): BoxRestore {
  const destination = selectOffsite({ ...config.offsite, url: opts.from })
  if (!destination) throw new Error('No off-box copy to restore from: give --from s3://BUCKET/PREFIX or file:///PATH')
  const database = databasePath(config)
  return new BoxRestore({
    destination,
    unsealer: { open: (s) => open(s, opts.identities), openBytes: (b) => openBytes(b, opts.identities) },
    files: new LocalLanding(workDirOf(config)),
    archives: new LocalArchiveStore(config.archives.dir),
    paths: { dataDir: config.server.dataDir, database, tls: join(config.server.dataDir, 'tls'), secretsKey: secretsKeyPath(config) },
    trust: opts.trust,
    migrate: () => {
      const store = openStore(database)
      try {
        return migrate(store)
      } finally {
        store.close()
      }
    },
    clock: systemClock,
  })
}

/** What the second half reads of the areas built on the restored store. */
export interface SitesReturnDeps {
  config: Config
  runtime: ContainerRuntime
  runner: SiteRunner
  log: Logger
  repos: Pick<SharedRepositories, 'sites' | 'archives'>
  archiveStore: ArchiveStore
  /** The databases' dumps in the archives, told of the databases (compose/sites.ts). */
  dumps: ArchiveDumps
}

/** The second half, over the areas built on the restored store. */
export function buildSitesReturn(deps: SitesReturnDeps): SitesReturn {
  const { config, runtime, runner, log, repos, archiveStore, dumps } = deps
  return new SitesReturn({
    sites: repos.sites, runner, runtime, log, clock: systemClock,
    archiveRows: repos.archives,
    tar: gnuTar,
    archives: archiveStore,
    work: new LocalWorkFolder(workDirOf(config)),
    dumps,
  })
}
