import { t } from 'elysia'
import { SLUG_PATTERN } from '../../core/slugs'
import { PLAN_SLUG } from '../../config/config'
import { schemaOp } from '../http/doors'
import { Body, DateTime, Email, Nullable, Query, Text, Uuid } from '../http/schemas'
import { CheckoutSession } from '../../domain/checkout'
export { CheckoutSession }

export const CHECKOUT_STATUSES = ['not_ready', 'ready', 'awaiting_payment', 'in_progress', 'completed', 'canceled', 'failed'] as const
export type CheckoutStatus = (typeof CHECKOUT_STATUSES)[number]

/**
 * The body of a new checkout: a SKU is `{prefix}_{plan_slug}_{monthly|annual}` (the brand's
 * prefix, config brand.prefix; CheckoutService.parseSku), so the schema is made per server.
 */
export const createCheckoutBody = (prefix: string) => Body({
  sku: t.String({
    maxLength: 100,
    pattern: `^${prefix}_${PLAN_SLUG.source.slice(1, -1)}_(?:monthly|annual)$`,
    examples: [`${prefix}_starter_monthly`],
    description: 'From GET /plans/: plan.skus.monthly or plan.skus.annual.',
    error: `must be ${prefix}_{plan_slug}_{monthly|annual}, a plan's skus.monthly or skus.annual as ${schemaOp('listPlans')} lists them`,
  }),
})

export const UpdateCheckoutBody = Body({
  buyer_email: t.Optional(Email({ description: 'Where receipts go.' })),
  requested_slug: t.Optional(t.String({ pattern: SLUG_PATTERN, minLength: 3, maxLength: 50, error: 'must be 3 to 50 lowercase letters, digits and hyphens, starting and ending with a letter or digit' })),
})

export const CompleteCheckoutBody = Body({
  payment_method: t.Optional(t.Union([t.Literal('processor_checkout'), t.Literal('processor_payment_method')], { description: 'Default processor_checkout (a hosted payment page).' })),
  payment_method_id: t.Optional(Text({ minLength: 1, maxLength: 200, description: 'Required for processor_payment_method; in test mode pm_card_visa or pm_card_mastercard pay, pm_card_visa_chargeDeclined declines.' })),
})

export const CheckoutParams = t.Object({ checkout_id: Uuid() })
export const CheckoutSecretQuery = Query({ checkout_secret: t.Optional(t.String({ maxLength: 200 })) })
