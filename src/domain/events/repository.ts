import { and, asc, desc, eq, gt, inArray, lt } from 'drizzle-orm'
import { events, type EventRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { EventType } from './types'

const PRUNE_BATCH = 5000

export type EventInsert = Omit<typeof events.$inferInsert, 'seq'>

export interface EventQuery {
  accountId: string
  siteId?: string
  afterSeq?: number
  types?: EventType[]
  limit: number
  /** The newest `limit` instead of the oldest (still returned oldest first). */
  newest?: boolean
}

/** The event log's rows (store/schema/events.ts). */
export class EventsRepository {
  constructor(private store: Store) {}

  /** Inserts in the current transaction (the caller's `store.write`), returning the row with its `seq`. */
  insert(row: EventInsert): EventRow {
    return this.store.db.insert(events).values(row).returning().get()
  }

  /** The account's events after `afterSeq`, oldest first (by the site's, of those types, when given). */
  list(q: EventQuery): EventRow[] {
    const rows = this.store.db.select().from(events)
      .where(and(
        eq(events.accountId, q.accountId),
        q.siteId !== undefined ? eq(events.siteId, q.siteId) : undefined,
        q.afterSeq !== undefined ? gt(events.seq, q.afterSeq) : undefined,
        q.types?.length ? inArray(events.type, q.types) : undefined,
      ))
      .orderBy(q.newest ? desc(events.seq) : asc(events.seq)).limit(q.limit).all()
    return q.newest ? rows.reverse() : rows
  }

  find(accountId: string, id: string): EventRow | undefined {
    return this.store.db.select().from(events).where(and(eq(events.id, id), eq(events.accountId, accountId))).get()
  }

  /** The newest event's seq of the account, 0 when it has none. */
  lastSeq(accountId: string): number {
    return this.store.db.select({ seq: events.seq }).from(events).where(eq(events.accountId, accountId)).orderBy(desc(events.seq)).limit(1).get()?.seq ?? 0
  }

  /** Which of these seqs are in the store (committed; not rolled back). */
  existing(seqs: number[]): Set<number> {
    if (seqs.length === 0) return new Set()
    return new Set(this.store.db.select({ seq: events.seq }).from(events).where(inArray(events.seq, seqs)).all().map((r) => r.seq))
  }

  /**
   * Deletes the events recorded before `before`, PRUNE_BATCH at a time (each its own short
   * transaction, so the API's writes wait at most one batch); returns how many.
   */
  deleteBefore(before: number): number {
    let removed = 0
    for (;;) {
      const batch = this.store.write(() => this.store.db.delete(events)
        .where(inArray(events.seq, this.store.db.select({ seq: events.seq }).from(events).where(lt(events.createdAt, before)).limit(PRUNE_BATCH)))
        .returning({ seq: events.seq }).all().length)
      removed += batch
      if (batch < PRUNE_BATCH) return removed
    }
  }
}
