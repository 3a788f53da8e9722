import { Type as t, type Static } from '@sinclair/typebox'
import { BillingPeriodSchema, CheckoutStatusSchema, PaymentMethodKindSchema } from '../../core/enums'
import { DateTime, Nullable, Uuid } from '../schema'

export const CheckoutSession = t.Object({
  id: Uuid(),
  sku: t.String({ description: '{prefix}_{plan_slug}_{monthly|annual}' }),
  plan_slug: t.String(),
  billing_period: BillingPeriodSchema,
  status: CheckoutStatusSchema,
  buyer_email: Nullable(t.String()),
  requested_slug: Nullable(t.String()),
  amount: t.Number({ description: 'CAD for the first billing period.' }),
  currency: t.Literal('CAD'),
  created_at: DateTime(),
  expires_at: DateTime('An unpaid session is canceled at this time (24 h after creation).'),
  test_mode: t.Boolean({ description: 'True when the built-in test processor takes the payment: no real money moves.' }),
  checkout_secret: t.Optional(t.String({ description: 'Shown once, in the creation response; send it as ?checkout_secret= or X-Checkout-Secret on every later call.' })),
  payment_method: Nullable(PaymentMethodKindSchema),
  processor_checkout_url: t.Optional(t.String({ description: 'Hosted payment page, when payment_method is processor_checkout.' })),
  api_key: t.Optional(t.String({ description: 'The new account\'s first key: present once, when the session completes without a bearer key, then never again.' })),
  subscription_id: Nullable(Uuid()),
  site_slug: Nullable(t.String()),
  site_url: Nullable(t.String()),
  error: Nullable(t.String({ description: 'Why the session failed.' })),
})
export type CheckoutView = Static<typeof CheckoutSession>
