import { and, asc, eq, inArray, lte, ne } from 'drizzle-orm'
import { domains, type DomainRow } from '../../store/schema'
import { onFirstUse } from '../../store/prepared'
import type { Store } from '../../store/store'
import type { DomainRecords } from './records'

/** Registered domains. */
export class DomainsRepository implements DomainRecords {
  constructor(private store: Store) {}

  /** Read for every list of site views: prepared once (src/store/prepared.ts). */
  private linkedToSites = onFirstUse(() => this.store.sqlite.prepare<{ name: string; at: number }, [string]>(`
    SELECT d.name, j.key AS at FROM json_each(?) j JOIN domains d ON d.site_id = j.value
    WHERE d.status = 'active' ORDER BY d.name`))

  insert(row: typeof domains.$inferInsert): DomainRow {
    return this.store.db.insert(domains).values(row).returning().get()
  }

  find(id: string): DomainRow | undefined {
    return this.store.db.select().from(domains).where(eq(domains.id, id)).get()
  }

  findByName(name: string): DomainRow | undefined {
    return this.store.db.select().from(domains).where(eq(domains.name, name)).get()
  }

  /** The account's domain by name; another account's answers undefined (the API says 404). */
  findOwned(accountId: string, name: string): DomainRow | undefined {
    return this.store.db.select().from(domains).where(and(eq(domains.name, name), eq(domains.accountId, accountId))).get()
  }

  listOwned(accountId: string): DomainRow[] {
    return this.store.db.select().from(domains).where(eq(domains.accountId, accountId)).orderBy(asc(domains.name)).all()
  }

  /** The names linked to each of these sites. */
  linkedTo(siteIds: string[]): Map<string, string[]> {
    const out = new Map<string, string[]>()
    if (siteIds.length === 0) return out
    // Each row names its site by position in `siteIds`.
    for (const d of this.linkedToSites().all(JSON.stringify(siteIds))) {
      const siteId = siteIds[d.at]!
      const names = out.get(siteId)
      if (names) names.push(d.name)
      else out.set(siteId, [d.name])
    }
    return out
  }

  /** Every active, linked domain with its site (the edge routes them). */
  linked(): { name: string; siteId: string }[] {
    return this.store.db.select({ name: domains.name, siteId: domains.siteId }).from(domains).where(eq(domains.status, 'active')).all()
      .filter((d): d is { name: string; siteId: string } => d.siteId !== null)
  }

  update(id: string, set: Partial<typeof domains.$inferInsert>): DomainRow {
    return this.store.db.update(domains).set(set).where(eq(domains.id, id)).returning().get()
  }

  /** Domains with auto-renew on whose expiry is before `before`. */
  dueForRenewal(before: number): DomainRow[] {
    return this.store.db.select().from(domains).where(and(eq(domains.autoRenew, true), lte(domains.expiresAt, before))).all()
  }

  /** Unlinks every domain of a site (when it is reaped). */
  unlinkSite(siteId: string, at: number): void {
    this.store.db.update(domains).set({ siteId: null, updatedAt: at }).where(eq(domains.siteId, siteId)).run()
  }

  /** Active domains whose expiry has passed. */
  expiredBefore(now: number): DomainRow[] {
    return this.store.db.select().from(domains).where(and(eq(domains.status, 'active'), lte(domains.expiresAt, now))).all()
  }

  /** The account's free first years, used or being registered (a failed registration used none). */
  countFree(accountId: string): number {
    return this.store.db.select({ id: domains.id }).from(domains).where(and(eq(domains.accountId, accountId), eq(domains.freeFirstYear, true), ne(domains.status, 'failed'))).all().length
  }

  /** Removes a domain row (a failed registration, when the name is registered again). */
  remove(id: string): void {
    this.store.db.delete(domains).where(eq(domains.id, id)).run()
  }
}
