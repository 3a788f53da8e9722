import { and, asc, desc, eq, inArray, isNotNull, lt, lte, or, sql } from 'drizzle-orm'
import { payments, processorEvents, subscriptions, type PaymentRow, type SubscriptionRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { BillingRecords, NewPayment } from './records'

export type { NewPayment } from './records'

/** `processor_events.type` of an event a delivery is acting on, and of one acted on for good. */
const EVENT_CLAIMED = 'claimed'
const EVENT_ACTED_ON = 'webhook'

/** Subscriptions and payments. Writes join the caller's transaction when there is one. */
export class BillingRepository implements BillingRecords {
  constructor(private store: Store) {}

  /** A new subscription, paid up to `currentPeriodEnd`: its first renewal is due then. */
  insertSubscription(row: Pick<SubscriptionRow, 'id' | 'accountId' | 'planSlug' | 'billingPeriod' | 'status' | 'currentPeriodEnd' | 'amountCents' | 'processor' | 'createdAt' | 'updatedAt'>): SubscriptionRow {
    return this.store.write(() => this.store.db.insert(subscriptions).values({ ...row, currentPeriodStart: row.createdAt, nextChargeAt: row.currentPeriodEnd }).returning().get())
  }

  insertPayment(row: NewPayment): PaymentRow {
    return this.store.write(() => this.store.db.insert(payments).values(row).returning().get())
  }

  updatePayment(id: string, patch: Partial<Omit<PaymentRow, 'id'>>): PaymentRow {
    return this.store.write(() => this.store.db.update(payments).set(patch).where(eq(payments.id, id)).returning().get()!)
  }

  findPaymentById(id: string): PaymentRow | undefined {
    return this.store.db.select().from(payments).where(eq(payments.id, id)).get()
  }

  /** Removes a payment only while it is pending (a declined checkout card: nothing to keep). */
  deletePendingPayment(id: string): void {
    this.store.write(() => this.store.db.delete(payments).where(and(eq(payments.id, id), eq(payments.status, 'pending'))).run())
  }

  /** Payments still pending that were opened before `before` (epoch ms), oldest first. */
  pendingPayments(before: number): PaymentRow[] {
    return this.store.db.select().from(payments).where(and(eq(payments.status, 'pending'), lt(payments.createdAt, before))).orderBy(asc(payments.createdAt)).all()
  }

  /** Payments whose key is `base` or `base:<n>` (the attempts at paying for one thing). */
  paymentsByKeyBase(base: string): PaymentRow[] {
    return this.store.db.select().from(payments)
      .where(or(eq(payments.idempotencyKey, base), sql`substr(${payments.idempotencyKey}, 1, ${base.length + 1}) = ${`${base}:`}`)).all()
  }

  paymentByKey(idempotencyKey: string): PaymentRow | undefined {
    return this.store.db.select().from(payments).where(eq(payments.idempotencyKey, idempotencyKey)).get()
  }

  updateSubscription(id: string, patch: Partial<Omit<SubscriptionRow, 'id'>>): SubscriptionRow {
    return this.store.write(() => this.store.db.update(subscriptions).set(patch).where(eq(subscriptions.id, id)).returning().get()!)
  }

  /** Subscriptions whose renewal (or a retry of it) is due at `now`. */
  dueForCharge(now: number): SubscriptionRow[] {
    return this.store.db.select().from(subscriptions)
      .where(and(inArray(subscriptions.status, ['active', 'past_due']), isNotNull(subscriptions.nextChargeAt), lte(subscriptions.nextChargeAt, now))).all()
  }

  /** Past-due subscriptions unpaid since before `before`. */
  unpaidSince(before: number): SubscriptionRow[] {
    return this.store.db.select().from(subscriptions).where(and(eq(subscriptions.status, 'past_due'), lte(subscriptions.unpaidSince, before))).all()
  }

  /** Canceled-at-period-end subscriptions whose period has ended (or that are unpaid). */
  endingBy(now: number): SubscriptionRow[] {
    return this.store.db.select().from(subscriptions)
      .where(and(inArray(subscriptions.status, ['active', 'past_due']), eq(subscriptions.cancelAtPeriodEnd, true))).all()
      .filter((s) => s.status === 'past_due' || s.currentPeriodEnd <= now)
  }

  /** Every subscription of the account, newest first. */
  subscriptionsOf(accountId: string): SubscriptionRow[] {
    return this.store.db.select().from(subscriptions).where(eq(subscriptions.accountId, accountId)).orderBy(desc(subscriptions.createdAt)).all()
  }

  /** Payments of the account (pending ones included), newest first. */
  paymentsOf(accountId: string): PaymentRow[] {
    return this.store.db.select().from(payments).where(eq(payments.accountId, accountId)).orderBy(desc(payments.createdAt)).all()
  }

  findPayment(accountId: string, id: string): PaymentRow | undefined {
    return this.store.db.select().from(payments).where(and(eq(payments.id, id), eq(payments.accountId, accountId))).get()
  }

  /**
   * Claims a processor event for the one delivery that will act on it: true when this call
   * recorded `id` (as `claimed`), false when it was recorded before, acted on or being acted on.
   * One INSERT against the primary key, so two deliveries at the same moment get one true.
   */
  claimEvent(id: string, processor: string, at: number): boolean {
    return this.store.write(() => this.store.db.insert(processorEvents).values({ id, processor, type: EVENT_CLAIMED, receivedAt: at }).onConflictDoNothing().returning({ id: processorEvents.id }).all().length === 1)
  }

  /** Marks a claimed event as acted on, for good. */
  settleEvent(id: string): void {
    this.store.write(() => this.store.db.update(processorEvents).set({ type: EVENT_ACTED_ON }).where(eq(processorEvents.id, id)).run())
  }

  /** Gives a claim up (its handling failed): the processor's next delivery of the event is acted on. */
  releaseEvent(id: string): void {
    this.store.write(() => this.store.db.delete(processorEvents).where(and(eq(processorEvents.id, id), eq(processorEvents.type, EVENT_CLAIMED))).run())
  }

  /**
   * Gives up the claims made before `before` and never settled: a process stopped while acting
   * on them, and nothing of it is in flight any more (called at start, before the listener).
   * Returns how many.
   */
  releaseStaleClaims(before: number): number {
    return this.store.write(() => this.store.db.delete(processorEvents).where(and(eq(processorEvents.type, EVENT_CLAIMED), lt(processorEvents.receivedAt, before))).returning({ id: processorEvents.id }).all().length)
  }

  findSubscription(accountId: string, id: string): SubscriptionRow | undefined {
    return this.store.db.select().from(subscriptions).where(and(eq(subscriptions.id, id), eq(subscriptions.accountId, accountId))).get()
  }

  /** Subscriptions that are paid for or being collected (active, past_due). */
  liveSubscriptions(accountId: string): SubscriptionRow[] {
    return this.store.db.select().from(subscriptions).where(and(eq(subscriptions.accountId, accountId), inArray(subscriptions.status, ['active', 'past_due']))).all()
  }

  activeSubscriptions(accountId: string): SubscriptionRow[] {
    return this.store.db.select().from(subscriptions).where(and(eq(subscriptions.accountId, accountId), eq(subscriptions.status, 'active'))).all()
  }

  /** The payment that paid for a checkout (declined or pending attempts aside). */
  paymentForCheckout(checkoutId: string): PaymentRow | undefined {
    return this.store.db.select().from(payments).where(and(eq(payments.checkoutId, checkoutId), inArray(payments.status, ['succeeded', 'refunded']))).get()
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
      this.store.db.update(subscriptions).set({ status, endedAt: at, nextChargeAt: null, updatedAt: at }).where(eq(subscriptions.id, id)).run()
    })
  }
}

