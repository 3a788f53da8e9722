import { t } from 'elysia'
import { SLUG_PATTERN } from '../../domain/slugs'
import { Body, DateTime, Nullable, Query, Uuid } from '../http/schemas'

export const CHECKOUT_STATUSES = ['not_ready', 'ready', 'awaiting_payment', 'in_progress', 'completed', 'canceled', 'failed'] as const
export type CheckoutStatus = (typeof CHECKOUT_STATUSES)[number]

export const CheckoutSession = t.Object({
  id: Uuid(),
  sku: t.String({ description: '{prefix}_{plan_slug}_{monthly|annual}' }),
  plan_slug: t.String(),
  billing_period: t.Union([t.Literal('monthly'), t.Literal('annual')]),
  status: t.Union([t.Literal('not_ready'), t.Literal('ready'), t.Literal('awaiting_payment'), t.Literal('in_progress'), t.Literal('completed'), t.Literal('canceled'), t.Literal('failed')]),
  buyer_email: Nullable(t.String()),
  requested_slug: Nullable(t.String()),
  amount: t.Number({ description: 'CAD for the first billing period.' }),
  currency: t.Literal('CAD'),
  created_at: DateTime(),
  expires_at: DateTime('An unpaid session is canceled at this time (24 h after creation).'),
  test_mode: t.Boolean({ description: 'True when the built-in test processor takes the payment: no real money moves.' }),
  checkout_secret: t.Optional(t.String({ description: 'Shown once, in the creation response; send it as ?checkout_secret= or X-Checkout-Secret on every later call.' })),
  payment_method: Nullable(t.Union([t.Literal('processor_checkout'), t.Literal('processor_payment_method')])),
  processor_checkout_url: t.Optional(t.String({ description: 'Hosted payment page, when payment_method is processor_checkout.' })),
  api_key: t.Optional(t.String({ description: 'The new account\'s first key: present once, when the session completes without a bearer key, then never again.' })),
  subscription_id: Nullable(Uuid()),
  site_slug: Nullable(t.String()),
  site_url: Nullable(t.String()),
  error: Nullable(t.String({ description: 'Why the session failed.' })),
})

export const CreateCheckoutBody = Body({
  sku: t.String({ minLength: 1, maxLength: 100, description: 'From GET /plans/: plan.skus.monthly or plan.skus.annual.' }),
})

export const UpdateCheckoutBody = Body({
  buyer_email: t.Optional(t.String({ format: 'email', maxLength: 254 })),
  requested_slug: t.Optional(t.String({ pattern: SLUG_PATTERN, minLength: 3, maxLength: 50, error: 'must be 3 to 50 lowercase letters, digits and hyphens, starting and ending with a letter or digit' })),
})

export const CompleteCheckoutBody = Body({
  payment_method: t.Optional(t.Union([t.Literal('processor_checkout'), t.Literal('processor_payment_method')], { description: 'Default processor_checkout (a hosted payment page).' })),
  payment_method_id: t.Optional(t.String({ minLength: 1, maxLength: 200, description: 'Required for processor_payment_method; in test mode pm_card_visa or pm_card_mastercard pay, pm_card_visa_chargeDeclined declines.' })),
})

export const CheckoutParams = t.Object({ checkout_id: Uuid() })
export const CheckoutSecretQuery = Query({ checkout_secret: t.Optional(t.String({ maxLength: 200 })) })
