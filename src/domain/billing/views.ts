import { Type as t, type Static } from '@sinclair/typebox'
import { BillingPeriodSchema, HostingTypeSchema, SubscriptionStatusSchema } from '../enums'

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

/** A payment as the billing portal and receipts show it. */
export interface PaymentView {
  id: string
  kind: string
  status: string
  amount_cents: number
  description: string
  method: string
  created_at: number
  test_mode: boolean
  failure: string | null
  refunded_at: number | null
}
