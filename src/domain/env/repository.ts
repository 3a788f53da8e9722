import { and, asc, eq } from 'drizzle-orm'
import { siteEnv } from '../../store/schema'
import type { Store } from '../../store/store'

/** One variable of a site as the store keeps it: `value` for a plain one, `sealed` for a secret. */
export type SiteEnvRow = typeof siteEnv.$inferSelect

/** The sites' settings and secrets (table site_env); a secret's value is only ever here sealed. */
export class SiteEnvRepository {
  constructor(private store: Store) {}

  /** The site's variables by name. */
  list(siteId: string): SiteEnvRow[] {
    return this.store.db.select().from(siteEnv).where(eq(siteEnv.siteId, siteId)).orderBy(asc(siteEnv.name)).all()
  }

  /** Inserts the variable or replaces the one of that name. */
  put(row: SiteEnvRow): void {
    this.store.db.insert(siteEnv).values(row)
      .onConflictDoUpdate({ target: [siteEnv.siteId, siteEnv.name], set: { value: row.value, sealed: row.sealed, secret: row.secret, updatedAt: row.updatedAt } }).run()
  }

  remove(siteId: string, name: string): void {
    this.store.db.delete(siteEnv).where(and(eq(siteEnv.siteId, siteId), eq(siteEnv.name, name))).run()
  }

  removeAll(siteId: string): void {
    this.store.db.delete(siteEnv).where(eq(siteEnv.siteId, siteId)).run()
  }
}
