/** The databases area as others see it (docs/architecture.md, "Areas are modules"): the sites' managed databases (issue 40). */
import type { Store } from '../../store/store'
import { DatabasesRepository } from './repository'
export { DatabasesService, type DatabasesDeps } from './service'
export { Database, DatabaseLog, DatabaseWithUrl, SiteDatabase, type DatabaseLogView, type DatabaseView, type DatabaseWithUrlView, type SiteDatabaseSummary } from './views'
export { DatabaseLife, type DatabaseLifeDeps } from './life'
export { DatabaseSizes, SIZE_CACHE_MS } from './sizes'
export { DatabaseCarrier, type CarriedDatabases, type DatabaseCarrierDeps } from './placement'
export { DatabaseArchives, type ArchiveDumpSource, type DatabaseArchivesDeps } from './archives'
export { DB_NAME_PATTERN, DB_PORTS, DB_USER, PASSWORD_CHARS, RESERVED_DB_NAMES, urlOf } from './rules'
export type { DatabaseRuntime, DatabaseRunning, DatabaseSpec, DatabaseState, DbEngine } from './ports'

/** The composition root's way to this area's repository, which stays the area's own. */
export function makeDatabasesRepository(store: Store): DatabasesRepository {
  return new DatabasesRepository(store)
}
export { DatabaseEvents } from './database-events'
