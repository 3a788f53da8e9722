import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { API_KEY_STATES, BILLING_PERIODS, CHECKOUT_STATUSES, HOSTING_TYPES, PAYMENT_METHOD_KINDS, PAYMENT_KINDS, PAYMENT_STATUSES, SUBSCRIPTION_STATUSES, TRACKS } from '../../core/enums'
import { accounts } from './accounts'

/** The plan catalog and money: subscriptions, checkout sessions, payments and the processors' records. */

export const plans = sqliteTable('plans', {
  slug: text('slug').primaryKey(),
  name: text('name').notNull(),
  track: text('track', { enum: TRACKS }).notNull(),
  hostingType: text('hosting_type', { enum: HOSTING_TYPES }).notNull(),
  /** CAD cents, so that sums never drift. */
  priceMonthlyCents: integer('price_monthly_cents').notNull(),
  priceAnnualCents: integer('price_annual_cents').notNull(),
  maxSites: integer('max_sites').notNull(),
  aiModules: text('ai_modules').notNull(),
  freeDomainAnnual: integer('free_domain_annual', { mode: 'boolean' }).notNull(),
  memoryMb: integer('memory_mb').notNull(),
  cpuCores: integer('cpu_cores').notNull(),
  diskGb: integer('disk_gb').notNull(),
  /** Model tokens each site of the plan may use per UTC month (AI modules); 0: none. */
  aiTokensMonthly: integer('ai_tokens_monthly').notNull().default(0),
  deprecated: integer('deprecated', { mode: 'boolean' }).notNull().default(false),
  /** Catalog order: the order plans were seeded or added. */
  position: integer('position').notNull(),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

export const subscriptions = sqliteTable('subscriptions', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  planSlug: text('plan_slug').notNull().references(() => plans.slug),
  billingPeriod: text('billing_period', { enum: BILLING_PERIODS }).notNull(),
  /** `active`, `past_due`, `canceled`, `ended`. */
  status: text('status', { enum: SUBSCRIPTION_STATUSES }).notNull(),
  currentPeriodEnd: integer('current_period_end').notNull(),
  /** When the period being paid for began (the purchase, then each renewal). */
  currentPeriodStart: integer('current_period_start'),
  /** CAD cents charged per period. */
  amountCents: integer('amount_cents').notNull().default(0),
  processor: text('processor').notNull().default('local'),
  processorRef: text('processor_ref'),
  /** Canceled by its owner: it ends at `current_period_end` instead of renewing. */
  cancelAtPeriodEnd: integer('cancel_at_period_end', { mode: 'boolean' }).notNull().default(false),
  /** When the renewal job next charges (the period end, then the retries); null when none is due. */
  nextChargeAt: integer('next_charge_at'),
  /** Renewal attempts declined for the unpaid period (0 while paid up). */
  failedCharges: integer('failed_charges').notNull().default(0),
  /** The period end that went unpaid (`past_due`); its sites are suspended 7 days after it. */
  unpaidSince: integer('unpaid_since'),
  /** Why the last renewal charge failed, as the processor said it. */
  lastChargeError: text('last_charge_error'),
  /** CAD cents owed back to the account (a downgrade mid-period), taken off the next renewal. */
  creditCents: integer('credit_cents').notNull().default(0),
  endedAt: integer('ended_at'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [index('subscriptions_account').on(t.accountId, t.status), index('subscriptions_due').on(t.nextChargeAt)])

/** ACP checkout sessions (design.md, Checkout). */
export const checkoutSessions = sqliteTable('checkout_sessions', {
  id: text('id').primaryKey(),
  /** SHA-256 of the checkout secret; the secret is shown once, at creation. */
  secretHash: text('secret_hash').notNull(),
  sku: text('sku').notNull(),
  planSlug: text('plan_slug').notNull().references(() => plans.slug),
  billingPeriod: text('billing_period', { enum: BILLING_PERIODS }).notNull(),
  /** not_ready, ready, awaiting_payment, in_progress, completed, canceled, failed. */
  status: text('status', { enum: CHECKOUT_STATUSES }).notNull(),
  buyerEmail: text('buyer_email'),
  requestedSlug: text('requested_slug'),
  amountCents: integer('amount_cents').notNull(),
  currency: text('currency').notNull(),
  /** The account the site joins: the bearer's at creation, or the one created on completion. */
  accountId: text('account_id').references(() => accounts.id),
  /** True when the session was created without a key, so completion issues the account's first key. */
  anonymous: integer('anonymous', { mode: 'boolean' }).notNull(),
  /** none, pending (to be shown on the next poll), delivered. */
  apiKeyState: text('api_key_state', { enum: API_KEY_STATES }).notNull().default('none'),
  paymentMethod: text('payment_method', { enum: PAYMENT_METHOD_KINDS }),
  processorSessionRef: text('processor_session_ref'),
  processorCheckoutUrl: text('processor_checkout_url'),
  siteId: text('site_id'),
  subscriptionId: text('subscription_id'),
  error: text('error'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  completedAt: integer('completed_at'),
}, (t) => [
  index('checkout_sessions_slug').on(t.requestedSlug, t.status),
  uniqueIndex('checkout_sessions_processor_ref').on(t.processorSessionRef),
])

/** Money received, and refunded. */
export const payments = sqliteTable('payments', {
  id: text('id').primaryKey(),
  /** Null only while an anonymous buyer's checkout is being charged (its account is made when paid). */
  accountId: text('account_id').references(() => accounts.id),
  checkoutId: text('checkout_id'),
  subscriptionId: text('subscription_id'),
  amountCents: integer('amount_cents').notNull(),
  currency: text('currency').notNull(),
  /** pending (charging), succeeded, failed (declined) or refunded. */
  status: text('status', { enum: PAYMENT_STATUSES }).notNull(),
  /** What was paid for: purchase, renewal, proration, domain. */
  kind: text('kind', { enum: PAYMENT_KINDS }).notNull().default('purchase'),
  /** The receipt's line: plan, period and sites, or the domain. */
  description: text('description').notNull().default(''),
  /** The processor's idempotency key for this charge: the same key never charges twice. */
  idempotencyKey: text('idempotency_key'),
  /** The payment method charged (the processor's id), so a charge resumed after a crash repeats the same request. */
  paymentMethodId: text('payment_method_id'),
  /** For a renewal: the period it pays for (start and end, epoch ms). */
  periodStart: integer('period_start'),
  periodEnd: integer('period_end'),
  /** For a declined charge: the processor's code and message. */
  failureCode: text('failure_code'),
  failureMessage: text('failure_message'),
  processor: text('processor').notNull(),
  processorRef: text('processor_ref').notNull(),
  /** What paid, as the processor describes it (e.g. "visa ending 4242"); never a card number. */
  methodLabel: text('method_label').notNull(),
  testMode: integer('test_mode', { mode: 'boolean' }).notNull(),
  createdAt: integer('created_at').notNull(),
  refundedAt: integer('refunded_at'),
  refundRef: text('refund_ref'),
  refundReason: text('refund_reason'),
}, (t) => [
  index('payments_account').on(t.accountId),
  uniqueIndex('payments_idempotency').on(t.idempotencyKey).where(sql`idempotency_key IS NOT NULL`),
  index('payments_subscription').on(t.subscriptionId, t.status),
])

/**
 * The built-in processor's own record of the money it moved (test mode), keyed like Stripe's
 * idempotency keys: a charge repeated with the same key returns the first outcome.
 */
export const localCharges = sqliteTable('local_charges', {
  idempotencyKey: text('idempotency_key').primaryKey(),
  paymentRef: text('payment_ref').notNull(),
  amountCents: integer('amount_cents').notNull(),
  paymentMethodId: text('payment_method_id').notNull(),
  /** JSON of the ChargeResult returned the first time. */
  result: text('result').notNull(),
  createdAt: integer('created_at').notNull(),
})

/**
 * Processor webhook events, by the processor's event id: each is acted on once. A delivery claims
 * the id first (the primary key admits one), acts, then marks it acted on; a failure deletes the
 * claim so the processor's retry acts (issue 23, part 7).
 */
export const processorEvents = sqliteTable('processor_events', {
  id: text('id').primaryKey(),
  processor: text('processor').notNull(),
  /** 'claimed' while a delivery is acting on the event, 'webhook' once it was acted on. */
  type: text('type').notNull(),
  receivedAt: integer('received_at').notNull(),
})

export type PlanRow = typeof plans.$inferSelect
export type SubscriptionRow = typeof subscriptions.$inferSelect
export type CheckoutRow = typeof checkoutSessions.$inferSelect
export type PaymentRow = typeof payments.$inferSelect
