import { and, asc, eq, inArray, ne, sql } from 'drizzle-orm'
import { sites, type SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'

export type SiteStatus = 'provisioning' | 'active' | 'suspended' | 'pending_deletion' | 'deleted' | 'failed'

/** Site records: the desired state that the reconciler makes Docker match. */
export class SitesRepository {
  constructor(private store: Store) {}

  insert(row: { id: string; accountId: string; subscriptionId: string | null; slug: string; planSlug: string; createdAt: number }): SiteRow {
    return this.store.write(() =>
      this.store.db.insert(sites).values({ ...row, status: 'provisioning', updatedAt: row.createdAt }).returning().get(),
    )
  }

  find(id: string): SiteRow | undefined {
    return this.store.db.select().from(sites).where(eq(sites.id, id)).get()
  }

  /** The live (not deleted) site holding `slug`, whoever owns it. */
  findLiveBySlug(slug: string): SiteRow | undefined {
    return this.store.db.select().from(sites).where(and(eq(sites.slug, slug), ne(sites.status, 'deleted'))).get()
  }

  findOwned(accountId: string, slug: string): SiteRow | undefined {
    return this.store.db.select().from(sites).where(and(eq(sites.accountId, accountId), eq(sites.slug, slug), ne(sites.status, 'deleted'))).get()
  }

  listOwned(accountId: string): SiteRow[] {
    return this.store.db.select().from(sites).where(and(eq(sites.accountId, accountId), ne(sites.status, 'deleted'))).orderBy(asc(sites.createdAt), asc(sql`rowid`)).all()
  }

  listWithStatus(statuses: SiteStatus[]): SiteRow[] {
    return this.store.db.select().from(sites).where(inArray(sites.status, statuses)).all()
  }

  countForSubscription(subscriptionId: string): number {
    return this.store.db.select({ n: sql<number>`count(*)` }).from(sites).where(and(eq(sites.subscriptionId, subscriptionId), ne(sites.status, 'deleted'))).get()!.n
  }

  setStatus(id: string, status: SiteStatus, at: number, error: string | null = null): void {
    this.store.write(() => {
      this.store.db.update(sites).set({ status, error, updatedAt: at }).where(eq(sites.id, id)).run()
    })
  }
}
