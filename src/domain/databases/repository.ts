import { and, asc, eq, ne } from 'drizzle-orm'
import { siteDatabases, type SiteDatabaseRow } from '../../store/schema'
import type { Store } from '../../store/store'

export type { SiteDatabaseRow }

/** The sites' databases (table site_databases); a password is only ever here sealed. */
export class DatabasesRepository {
  constructor(private store: Store) {}

  /** The site's databases, oldest first. */
  list(siteId: string): SiteDatabaseRow[] {
    return this.store.db.select().from(siteDatabases).where(eq(siteDatabases.siteId, siteId)).orderBy(asc(siteDatabases.createdAt), asc(siteDatabases.name)).all()
  }

  find(siteId: string, name: string): SiteDatabaseRow | undefined {
    return this.store.db.select().from(siteDatabases).where(and(eq(siteDatabases.siteId, siteId), eq(siteDatabases.name, name))).get()
  }

  insert(row: SiteDatabaseRow): void {
    this.store.db.insert(siteDatabases).values(row).run()
  }

  update(id: string, set: Partial<Omit<SiteDatabaseRow, 'id' | 'siteId' | 'name'>>): void {
    this.store.db.update(siteDatabases).set(set).where(eq(siteDatabases.id, id)).run()
  }

  remove(id: string): void {
    this.store.db.delete(siteDatabases).where(eq(siteDatabases.id, id)).run()
  }

  removeAll(siteId: string): void {
    this.store.db.delete(siteDatabases).where(eq(siteDatabases.siteId, siteId)).run()
  }

  /** Every database of the box that is not deleted (wave 2's reconcile and suspension). */
  allLive(): SiteDatabaseRow[] {
    return this.store.db.select().from(siteDatabases).where(ne(siteDatabases.state, 'deleted')).all()
  }
}
