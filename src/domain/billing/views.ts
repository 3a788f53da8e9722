import { Type as t, type Static } from '@sinclair/typebox'
import { BillingPeriodSchema, HostingTypeSchema, SubscriptionStatusSchema } from '../../core/enums'
import { iso } from '../../lib/clock'
import { toDollars } from '../../core/money'
import type { PaymentRow } from '../../store/schema'

const Iso = t.String({ format: 'date-time' })
const Money = t.Number({ description: 'CAD, two decimals' })

/** A subscription as GET /account/subscriptions/ shows it (design.md, Money after the purchase). */
export const SubscriptionView = t.Object({
  id: t.String({ format: 'uuid' }),
  status: SubscriptionStatusSchema,
  plan: t.Object({
    slug: t.String(),
    name: t.String(),
    hosting_type: HostingTypeSchema,
    max_sites: t.Integer(),
    price: t.Object({ monthly: Money, annual: Money, currency: t.Literal('CAD') }),
  }),
  billing_period: BillingPeriodSchema,
  amount: t.Number({ description: 'What each period costs, CAD' }),
  currency: t.Literal('CAD'),
  current_period_start: Iso,
  current_period_end: Iso,
  cancel_at_period_end: t.Boolean(),
  /** When the renewal job charges next (the period end, or a retry while past due); null when none is due. */
  next_charge_at: t.Union([Iso, t.Null()]),
  /** Credit from a downgrade, taken off the next renewal. */
  credit: Money,
  /** past_due: since when the period is unpaid, and when its sites are (or were) suspended. */
  unpaid_since: t.Union([Iso, t.Null()]),
  suspends_at: t.Union([Iso, t.Null()]),
  last_charge_error: t.Union([t.String(), t.Null()]),
  payment_method: t.Union([t.Object({ label: t.String() }), t.Null()]),
  sites: t.Array(t.String(), { description: 'Slugs of the live sites billed under it' }),
  created_at: Iso,
  ended_at: t.Union([Iso, t.Null()]),
})
export type SubscriptionView = Static<typeof SubscriptionView>

/** A payment of the account (GET /account/payments/): what was paid for, how, and how it went. */
export const PaymentView = t.Object({
  id: t.String({ format: 'uuid' }),
  kind: t.Union([t.Literal('purchase'), t.Literal('renewal'), t.Literal('proration'), t.Literal('domain')]),
  status: t.Union([t.Literal('pending'), t.Literal('succeeded'), t.Literal('failed'), t.Literal('refunded')], { description: 'pending: being charged; failed: declined (nothing charged).' }),
  amount: Money,
  currency: t.Literal('CAD'),
  description: t.String({ description: 'What was paid for: plan, period and sites, or the domain.' }),
  method: t.String({ description: 'As the processor describes it, e.g. "visa ending 4242 (test)"; empty while pending.' }),
  subscription_id: t.Union([t.String({ format: 'uuid' }), t.Null()]),
  period_start: t.Union([Iso, t.Null()]),
  period_end: t.Union([Iso, t.Null()]),
  failure: t.Union([t.String(), t.Null()], { description: "The processor's reason for a declined charge." }),
  refunded_at: t.Union([Iso, t.Null()]),
  test_mode: t.Boolean({ description: 'True when no real money moved.' }),
  created_at: Iso,
})
export type PaymentView = Static<typeof PaymentView>

/** A payment row as GET /account/payments/ shows it (also the `data` of its events). */
export function paymentView(p: PaymentRow): PaymentView {
  return {
    id: p.id,
    kind: p.kind,
    status: p.status,
    amount: toDollars(p.amountCents),
    currency: 'CAD',
    description: p.description,
    method: p.methodLabel,
    subscription_id: p.subscriptionId,
    period_start: p.periodStart === null ? null : iso(p.periodStart),
    period_end: p.periodEnd === null ? null : iso(p.periodEnd),
    failure: p.failureMessage,
    refunded_at: p.refundedAt === null ? null : iso(p.refundedAt),
    test_mode: p.testMode,
    created_at: iso(p.createdAt),
  }
}
