import { and, asc, eq, inArray, lte, ne, sql } from 'drizzle-orm'
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

  /** The live (not deleted) sites billed under one subscription, oldest first. */
  listForSubscription(subscriptionId: string): SiteRow[] {
    return this.store.db.select().from(sites).where(and(eq(sites.subscriptionId, subscriptionId), ne(sites.status, 'deleted'))).orderBy(asc(sites.createdAt), asc(sql`rowid`)).all()
  }

  setPlan(ids: string[], planSlug: string, at: number): void {
    if (ids.length === 0) return
    this.store.write(() => {
      this.store.db.update(sites).set({ planSlug, updatedAt: at }).where(inArray(sites.id, ids)).run()
    })
  }

  /** `pending_deletion` until `deadline`; the error of a failed site is kept for its restore. */
  scheduleDeletion(id: string, deadline: number, at: number): SiteRow {
    return this.store.write(() =>
      this.store.db.update(sites).set({ status: 'pending_deletion', deletionScheduledFor: deadline, updatedAt: at }).where(eq(sites.id, id)).returning().get(),
    )
  }

  cancelDeletion(id: string, status: SiteStatus, at: number): SiteRow {
    return this.store.write(() =>
      this.store.db.update(sites).set({ status, deletionScheduledFor: null, updatedAt: at }).where(eq(sites.id, id)).returning().get(),
    )
  }

  /** Sites pending deletion whose grace period has ended at `now`. */
  listDueForDeletion(now: number): SiteRow[] {
    return this.store.db.select().from(sites).where(and(eq(sites.status, 'pending_deletion'), lte(sites.deletionScheduledFor, now))).all()
  }

  markDeleted(id: string, at: number): void {
    this.store.write(() => {
      this.store.db.update(sites).set({ status: 'deleted', deletedAt: at, updatedAt: at }).where(eq(sites.id, id)).run()
    })
  }
}
