/** Databases (issue 40): the sites' managed PostgreSQL, MariaDB and Redis, over the sites area's parts. */
import { DatabaseLife, DatabasesService, makeDatabasesRepository, type DatabaseRuntime, type DatabaseSizes } from '../domain/databases'
import type { AuditTrail } from '../domain/audit'
import type { SiteEnvService } from '../domain/env'
import type { PlansService } from '../domain/plans'
import type { SiteRecords } from '../domain/sites'
import type { SecretBox } from '../drivers/secrets/types'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { Store } from '../store/store'

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
}

/** The databases service and their life with the sites (domain/databases/life.ts: suspension, resumption, scale, the engine's events, reconcile). */
export function buildDatabases(n: DatabasesNeeds): { databases: DatabasesService; life: DatabaseLife } {
  const repo = makeDatabasesRepository(n.store)
  const databases = new DatabasesService({
    store: n.store, repo, runtime: n.runtime, box: n.box, plans: n.plans, audit: n.audit, clock: n.clock, log: n.log,
    // A database made, deleted or given a new password: the settings' listeners (compose/apps.ts) restart the app with its URLs.
    changed: (site) => n.env.providedChanged(site),
    ownNames: (siteId) => n.env.ownNames(siteId),
    slugOf: (siteId) => n.sites.find(siteId)?.slug,
    sizes: n.sizes,
  })
  // Its URLs reach the app, build, hook and exec under the site's own settings.
  n.env.provide((siteId) => databases.variablesOf(siteId), (siteId) => databases.passwordsOf(siteId))
  const life = new DatabaseLife({
    repo, runtime: n.runtime, plans: n.plans, sites: n.sites, clock: n.clock, log: n.log,
    opened: (row) => databases.passwordOf(row),
    busy: (siteId, name) => databases.busyWith(siteId, name),
    sizes: n.sizes,
  })
  return { databases, life }
}
