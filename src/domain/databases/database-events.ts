import { iso } from '../../lib/clock'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { EventLog } from '../events'
import type { DatabasesRepository, SiteDatabaseRow } from './repository'
import { DB_PORTS, DB_USER, databaseOf, hostOf } from './rules'

type DatabaseEventType = 'database.created' | 'database.deleted' | 'database.down' | 'database.up'

/**
 * The databases' events (docs/api.md, "Event types"), each written in one transaction with the
 * change of state it tells of. `data` is the database as GET /sites/{slug}/databases/{name}/
 * shows it, from the store alone: no URL, no password (`size_bytes` null, `variables` empty:
 * the API has them).
 */
export class DatabaseEvents {
  constructor(private d: { store: Pick<Store, 'write'>; events: Pick<EventLog, 'record'>; repo: Pick<DatabasesRepository, 'find'>; sites: { find(siteId: string): SiteRow | undefined } }) {}

  /** Runs `change` (a write of the database's row) and records `type` with the row it leaves, in one transaction. */
  changed<T>(type: DatabaseEventType, row: Pick<SiteDatabaseRow, 'siteId' | 'name'>, change: () => T): T {
    return this.d.store.write(() => {
      const result = change()
      const site = this.d.sites.find(row.siteId)
      const after = this.d.repo.find(row.siteId, row.name)
      if (site && after) this.d.events.record({ type, accountId: site.accountId, siteId: site.id, siteSlug: site.slug, data: databaseData(after) })
      return result
    })
  }
}

/** A database's view from its row: what GET shows, less what needs its server or the site's settings. */
export function databaseData(row: SiteDatabaseRow): Record<string, unknown> {
  return {
    name: row.name, engine: row.engine, version: row.version, state: row.state, size_bytes: null, memory_mb: row.memoryMb, disk_gb: row.diskGb,
    host: hostOf(row.name), port: DB_PORTS[row.engine], user: DB_USER, database: databaseOf(row.engine, row.name), variables: [],
    created_at: iso(row.createdAt), error: row.error,
  }
}
