import { and, eq } from 'drizzle-orm'
import { payments, subscriptions, type PaymentRow, type SubscriptionRow } from '../../store/schema'
import type { Store } from '../../store/store'

/** Subscriptions and payments. Writes join the caller's transaction when there is one. */
export class BillingRepository {
  constructor(private store: Store) {}

  insertSubscription(row: Omit<SubscriptionRow, 'endedAt' | 'processorRef'> & { processorRef?: string | null }): SubscriptionRow {
    return this.store.write(() => this.store.db.insert(subscriptions).values(row).returning().get())
  }

  insertPayment(row: Omit<PaymentRow, 'refundedAt' | 'refundRef' | 'refundReason'>): PaymentRow {
    return this.store.write(() => this.store.db.insert(payments).values(row).returning().get())
  }

  findSubscription(accountId: string, id: string): SubscriptionRow | undefined {
    return this.store.db.select().from(subscriptions).where(and(eq(subscriptions.id, id), eq(subscriptions.accountId, accountId))).get()
  }

  activeSubscriptions(accountId: string): SubscriptionRow[] {
    return this.store.db.select().from(subscriptions).where(and(eq(subscriptions.accountId, accountId), eq(subscriptions.status, 'active'))).all()
  }

  paymentForCheckout(checkoutId: string): PaymentRow | undefined {
    return this.store.db.select().from(payments).where(eq(payments.checkoutId, checkoutId)).get()
  }

  markRefunded(paymentId: string, at: number, refundRef: string, reason: string): void {
    this.store.write(() => {
      this.store.db.update(payments).set({ status: 'refunded', refundedAt: at, refundRef, refundReason: reason }).where(eq(payments.id, paymentId)).run()
    })
  }

  findSubscriptionById(id: string): SubscriptionRow | undefined {
    return this.store.db.select().from(subscriptions).where(eq(subscriptions.id, id)).get()
  }

  /** Moves a subscription to another plan; `amountCents` is what each period now costs. */
  changePlan(id: string, planSlug: string, amountCents: number, at: number): void {
    this.store.write(() => {
      this.store.db.update(subscriptions).set({ planSlug, amountCents, updatedAt: at }).where(eq(subscriptions.id, id)).run()
    })
  }

  endSubscription(id: string, at: number, status: 'canceled' | 'ended'): void {
    this.store.write(() => {
      this.store.db.update(subscriptions).set({ status, endedAt: at, updatedAt: at }).where(eq(subscriptions.id, id)).run()
    })
  }
}
