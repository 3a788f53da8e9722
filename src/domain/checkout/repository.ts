import { and, eq, inArray, lt, ne } from 'drizzle-orm'
import { checkoutSessions, type CheckoutRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { CheckoutStatus } from '../../core/enums'

/** Sessions that hold their requested slug against everyone else. */
export const SLUG_HOLDING: CheckoutStatus[] = ['ready', 'awaiting_payment', 'in_progress']

export class CheckoutRepository {
  constructor(private store: Store) {}

  insert(row: typeof checkoutSessions.$inferInsert): CheckoutRow {
    return this.store.write(() => this.store.db.insert(checkoutSessions).values(row).returning().get())
  }

  find(id: string): CheckoutRow | undefined {
    return this.store.db.select().from(checkoutSessions).where(eq(checkoutSessions.id, id)).get()
  }

  findByProcessorRef(ref: string): CheckoutRow | undefined {
    return this.store.db.select().from(checkoutSessions).where(eq(checkoutSessions.processorSessionRef, ref)).get()
  }

  findBySite(siteId: string): CheckoutRow | undefined {
    return this.store.db.select().from(checkoutSessions).where(eq(checkoutSessions.siteId, siteId)).get()
  }

  /** Another session holding `slug`, if any. */
  holderOf(slug: string, exceptId: string | null): CheckoutRow | undefined {
    const holding = and(eq(checkoutSessions.requestedSlug, slug), inArray(checkoutSessions.status, SLUG_HOLDING))
    return this.store.db.select().from(checkoutSessions).where(exceptId ? and(holding, ne(checkoutSessions.id, exceptId)) : holding).get()
  }

  update(id: string, changes: Partial<CheckoutRow>): CheckoutRow {
    return this.store.write(() => this.store.db.update(checkoutSessions).set(changes).where(eq(checkoutSessions.id, id)).returning().get())
  }

  /** Unpaid sessions past their expiry, to be canceled. */
  expired(now: number): CheckoutRow[] {
    return this.store.db.select().from(checkoutSessions)
      .where(and(inArray(checkoutSessions.status, ['not_ready', 'ready', 'awaiting_payment']), lt(checkoutSessions.expiresAt, now)))
      .all()
  }
}
