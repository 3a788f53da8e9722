import { and, count, desc, eq, gt, inArray, isNull, lt, or, sql } from 'drizzle-orm'
import type { AuditKind } from './trail'
import { auditEvents, sites, type AuditEventRow } from '../../store/schema'
import type { Store } from '../../store/store'

/** Where a page of a site's records ends, newest first: the last row's start and rowid. */
export interface AuditCursor {
  startedAt: number
  rowid: number
}

export type AuditEventInsert = Omit<typeof auditEvents.$inferInsert, 'accountId' | 'endedAt' | 'exitCode' | 'reason'>

const rowid = sql<number>`${auditEvents}.rowid`

/**
 * The audit trail's rows (store/schema/audit.ts). Every write is one statement, so what a
 * command's start wrote is on disk before the command runs.
 */
export class AuditRepository {
  constructor(private store: Store) {}

  /** Records a start; the owner is the site's account now. */
  insert(row: AuditEventInsert): void {
    this.store.write(() => {
      const site = this.store.db.select({ accountId: sites.accountId }).from(sites).where(eq(sites.id, row.siteId)).get()
      if (!site) throw new Error(`audit: no site ${row.siteId}`)
      this.store.db.insert(auditEvents).values({ ...row, accountId: site.accountId }).run()
    })
  }

  /** Records the end of a record still open; false when it was ended already (or is gone). */
  complete(id: string, end: { endedAt: number; exitCode: number | null; reason: string | null }): boolean {
    return this.store.write(() => this.store.db.update(auditEvents).set(end)
      .where(and(eq(auditEvents.id, id), isNull(auditEvents.endedAt))).returning({ id: auditEvents.id }).all().length > 0)
  }

  /**
   * Marks the open records of `kinds` started before `before` with `reason`: their process is
   * known to be gone (they stay without an end). Returns how many.
   */
  markLost(kinds: AuditKind[], before: number, reason: string): number {
    return this.store.write(() => this.store.db.update(auditEvents).set({ reason })
      .where(and(isNull(auditEvents.endedAt), isNull(auditEvents.reason), inArray(auditEvents.kind, kinds), lt(auditEvents.startedAt, before))).returning({ id: auditEvents.id }).all().length)
  }

  /** Up to `limit` of the site's records, newest first, older than `after` when given. */
  page(siteId: string, limit: number, after?: AuditCursor): (AuditEventRow & { rowid: number })[] {
    const older = after ? or(lt(auditEvents.startedAt, after.startedAt), and(eq(auditEvents.startedAt, after.startedAt), lt(rowid, after.rowid))) : undefined
    return this.store.db.select({ row: auditEvents, rowid }).from(auditEvents)
      .where(and(eq(auditEvents.siteId, siteId), older))
      .orderBy(desc(auditEvents.startedAt), desc(rowid)).limit(limit).all()
      .map(({ row, rowid }) => ({ ...row, rowid }))
  }

  find(id: string): AuditEventRow | undefined {
    return this.store.db.select().from(auditEvents).where(eq(auditEvents.id, id)).get()
  }

  /** Deletes every record started before `before`; returns how many. */
  deleteStartedBefore(before: number): number {
    return this.store.write(() => this.store.db.delete(auditEvents).where(lt(auditEvents.startedAt, before)).returning({ id: auditEvents.id }).all().length)
  }

  /** The sites holding more than `max` records. */
  sitesOver(max: number): string[] {
    return this.store.db.select({ siteId: auditEvents.siteId }).from(auditEvents)
      .groupBy(auditEvents.siteId).having(gt(count(), max)).all().map((r) => r.siteId)
  }

  /** Keeps only the site's newest `keep` records; returns how many went. */
  keepNewest(siteId: string, keep: number): number {
    return this.store.write(() => {
      const newer = this.store.db.select({ rowid }).from(auditEvents).where(eq(auditEvents.siteId, siteId))
        .orderBy(desc(auditEvents.startedAt), desc(rowid)).limit(keep)
      return this.store.db.delete(auditEvents).where(and(eq(auditEvents.siteId, siteId), sql`${rowid} not in ${newer}`)).returning({ id: auditEvents.id }).all().length
    })
  }

  /** Deletes every record of the site (it is being reaped). */
  deleteAllFor(siteId: string): void {
    this.store.write(() => this.store.db.delete(auditEvents).where(eq(auditEvents.siteId, siteId)).run())
  }
}
