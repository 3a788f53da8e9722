import type { PaymentRow, SubscriptionRow } from '../../store/schema'

/** A payment row as written: the optional columns default. */
type OptionalPaymentColumns = 'kind' | 'description' | 'idempotencyKey' | 'paymentMethodId' | 'periodStart' | 'periodEnd' | 'failureCode' | 'failureMessage'
export type NewPayment = Omit<PaymentRow, 'refundedAt' | 'refundRef' | 'refundReason' | OptionalPaymentColumns> & Partial<Pick<PaymentRow, OptionalPaymentColumns>>

/**
 * What other areas read and write of the subscriptions and payments (through this area's
 * index.ts): the methods of BillingRepository they use, which implements it. The repository itself
 * is this area's own; a consumer takes a Pick of this, the composition root hands it the
 * repository.
 */
export interface BillingRecords {
  findSubscriptionById(id: string): SubscriptionRow | undefined
  findSubscription(accountId: string, id: string): SubscriptionRow | undefined
  /** Subscriptions that are paid for or being collected (active, past_due). */
  liveSubscriptions(accountId: string): SubscriptionRow[]
  activeSubscriptions(accountId: string): SubscriptionRow[]
  /** Moves a subscription to another plan; `amountCents` is what each period now costs. */
  changePlan(id: string, planSlug: string, amountCents: number, at: number): void
  updateSubscription(id: string, patch: Partial<Omit<SubscriptionRow, 'id'>>): SubscriptionRow
  endSubscription(id: string, at: number, status: 'canceled' | 'ended'): void
  /** A new subscription, paid up to `currentPeriodEnd`: its first renewal is due then. */
  insertSubscription(row: Pick<SubscriptionRow, 'id' | 'accountId' | 'planSlug' | 'billingPeriod' | 'status' | 'currentPeriodEnd' | 'amountCents' | 'processor' | 'createdAt' | 'updatedAt'>): SubscriptionRow
  insertPayment(row: NewPayment): PaymentRow
  updatePayment(id: string, patch: Partial<Omit<PaymentRow, 'id'>>): PaymentRow
  /** The payment that paid for a checkout (declined or pending attempts aside). */
  paymentForCheckout(checkoutId: string): PaymentRow | undefined
  paymentByKey(idempotencyKey: string): PaymentRow | undefined
  /** Payments of the account (pending ones included), newest first. */
  paymentsOf(accountId: string): PaymentRow[]
  findPayment(accountId: string, id: string): PaymentRow | undefined
}
