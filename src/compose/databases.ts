/** Databases (issue 40): the sites' managed PostgreSQL, MariaDB and Redis, over the sites area's parts. */
import { DatabaseArchives, DatabaseEvents, DatabaseLife, DatabasesService, makeDatabasesRepository, type DatabaseRuntime, type DatabaseSizes } from '../domain/databases'
import { ArchiveDumpReader, type ArchiveDumps, type makeArchivesRepository } from '../domain/archives'
import type { ArchiveStore } from '../drivers/archives/types'
import type { DumpFiles, HomeTarballs, WorkFolder } from '../domain/archives'
import type { AuditTrail } from '../domain/audit'
import type { SiteEnvService } from '../domain/env'
import type { PlansService } from '../domain/plans'
import type { SiteRecords } from '../domain/sites'
import type { SecretBox } from '../drivers/secrets/types'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { Store } from '../store/store'
import type { EventLog } from '../domain/events'

/** What the databases take from the sites area, built before them. */
export interface DatabasesNeeds {
  store: Store
  clock: Clock
  log: Logger
  plans: Pick<PlansService, 'get'>
  sites: Pick<SiteRecords, 'find'>
  runtime: DatabaseRuntime
  /** The box key the settings' secrets are sealed with: the passwords are sealed with it too. */
  box: SecretBox
  audit: AuditTrail
  env: SiteEnvService
  sizes?: DatabaseSizes
  /** The sites' runs (SiteRunner): a move under way carries and starts the site's databases itself. */
  runs?: { underWay(slug: string): boolean; settled(slug: string): Promise<void> }
  /** The event log: database.created, .deleted, .down and .up, with the change (domain/databases/database-events.ts). */
  events?: Pick<EventLog, 'record'>
}

/** What the databases' part in archives takes (issue 40 item 3): the archive jobs' dumps and the archives' bytes. */
export interface DatabaseArchivesNeeds {
  dumps: ArchiveDumps
  archives: ReturnType<typeof makeArchivesRepository>
  files: ArchiveStore
  tar: Pick<HomeTarballs, 'decompressFile'>
  /** The work folder of a restore of one database: its own, as the archive jobs' is swept of what no job holds. */
  work: WorkFolder
  dumpFiles: DumpFiles
}

/** The databases service, their life with the sites (domain/databases/life.ts: suspension, resumption, scale, the engine's events, reconcile) and their part in archives. */
export function buildDatabases(n: DatabasesNeeds, a: DatabaseArchivesNeeds): { databases: DatabasesService; life: DatabaseLife; archives: DatabaseArchives } {
  const repo = makeDatabasesRepository(n.store)
  const events = n.events ? new DatabaseEvents({ store: n.store, events: n.events, repo, sites: n.sites }) : undefined
  const databases = new DatabasesService({
    store: n.store, repo, runtime: n.runtime, box: n.box, plans: n.plans, audit: n.audit, clock: n.clock, log: n.log,
    // A database made, deleted or given a new password: the settings' listeners (compose/apps.ts) restart the app with its URLs.
    changed: (site) => n.env.providedChanged(site),
    ownNames: (siteId) => n.env.ownNames(siteId),
    slugOf: (siteId) => n.sites.find(siteId)?.slug,
    sizes: n.sizes,
    events,
  })
  // Its URLs reach the app, build, hook and exec under the site's own settings.
  n.env.provide((siteId) => databases.variablesOf(siteId), (siteId) => databases.passwordsOf(siteId))
  const life = new DatabaseLife({
    repo, runtime: n.runtime, plans: n.plans, sites: n.sites, clock: n.clock, log: n.log,
    opened: (row) => databases.passwordOf(row),
    busy: (siteId, name) => databases.busyWith(siteId, name),
    sizes: n.sizes,
    runs: n.runs,
    events,
  })
  // Every snapshot and backup holds their dumps; its restore puts them back; one restores alone.
  const archives = new DatabaseArchives({
    service: databases, repo, runtime: n.runtime, plans: n.plans, audit: n.audit, clock: n.clock, log: n.log,
    archives: new ArchiveDumpReader({ repo: a.archives, files: a.files, tar: a.tar, work: a.work, dumpFiles: a.dumpFiles, clock: n.clock, log: n.log }),
    changed: (site) => n.env.providedChanged(site),
  })
  a.dumps.databases = archives
  return { databases, life, archives }
}
