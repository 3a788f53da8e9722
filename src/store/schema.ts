import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import {
  ACCOUNT_STATUSES, API_KEY_STATES, ARCHIVE_KINDS, ARCHIVE_STATUSES, BILLING_PERIODS, CHECKOUT_STATUSES, DEPLOYMENT_STATUSES, HOSTING_TYPES, JOB_STATUSES,
  KEY_REVOKED_REASONS, PAYMENT_METHOD_KINDS, DNS_RECORD_TYPES, DOMAIN_STATUSES, PAYMENT_KINDS, PAYMENT_STATUSES, SITE_STATUSES, SUBSCRIPTION_STATUSES, TRACKS,
} from '../core/enums'

/**
 * The store's tables. Times are integer milliseconds since the epoch (shown as ISO 8601 by the
 * API); ids are UUIDs as text; lists are JSON text. Changing a table means `bun run db:generate`
 * and adding the new file to migrations/index.ts.
 */

export const accounts = sqliteTable('accounts', {
  id: text('id').primaryKey(),
  email: text('email'),
  name: text('name').notNull(),
  firstName: text('first_name'),
  lastName: text('last_name'),
  language: text('language').notNull().default('en'),
  /** `active` or `anonymized` (after DELETE /account/delete/). */
  status: text('status', { enum: ACCOUNT_STATUSES }).notNull().default('active'),
  /**
   * The payment method on file: the id of the last method that paid a checkout directly
   * (`processor_payment_method`), charged for domain registrations and renewals.
   */
  paymentMethodId: text('payment_method_id'),
  /** How the processor describes it ("visa ending 4242 (test)"); never a card number. */
  paymentMethodLabel: text('payment_method_label'),
  /** The processor's customer for this account (Stripe `cus_...`), once a payment made one. */
  processorCustomerRef: text('processor_customer_ref'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [index('accounts_email').on(t.email)])

export const apiKeys = sqliteTable('api_keys', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  name: text('name').notNull(),
  /** First 12 characters of the key, safe to show in listings. */
  prefix: text('prefix').notNull(),
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  keyHash: text('key_hash').notNull(),
  /** JSON array of `read`, `write`, `admin`. */
  scopes: text('scopes').notNull(),
  /** Set for site-scoped keys (claim flow): the key works only on this site. */
  siteId: text('site_id'),
  createdAt: integer('created_at').notNull(),
  lastUsedAt: integer('last_used_at'),
  revokedAt: integer('revoked_at'),
  /** `revoked` or `rotated`. */
  revokedReason: text('revoked_reason', { enum: KEY_REVOKED_REASONS }),
  /** For a rotated key: the id of the key that replaced it. */
  replacedBy: text('replaced_by'),
}, (t) => [uniqueIndex('api_keys_hash').on(t.keyHash), index('api_keys_account').on(t.accountId)])

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

export const sites = sqliteTable('sites', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  subscriptionId: text('subscription_id').references(() => subscriptions.id),
  slug: text('slug').notNull(),
  planSlug: text('plan_slug').notNull().references(() => plans.slug),
  /** `provisioning`, `active`, `suspended`, `pending_deletion`, `deleted`, `failed`. */
  status: text('status', { enum: SITE_STATUSES }).notNull(),
  /** Why provisioning failed, for `failed` sites. */
  error: text('error'),
  deletionScheduledFor: integer('deletion_scheduled_for'),
  /** Host port of the site's sshd (vps and dedicated), from `ssh.port_range`; kept for its life. */
  sshPort: integer('ssh_port'),
  /** When the reaper removed it (status `deleted`). */
  deletedAt: integer('deleted_at'),
  /** JSON object: module name to enabled. */
  modules: text('modules').notNull().default('{}'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [
  // A slug is free again once its site is deleted (design.md, Checkout).
  uniqueIndex('sites_live_slug').on(t.slug).where(sql`status <> 'deleted'`),
  uniqueIndex('sites_ssh_port').on(t.sshPort).where(sql`ssh_port IS NOT NULL AND status <> 'deleted'`),
  index('sites_account').on(t.accountId, t.status),
  // An account's sites in their list's order (created_at, then rowid, which every index ends with):
  // GET /sites/ reads them without sorting (bench:lists, issue 22).
  index('sites_account_created').on(t.accountId, t.createdAt),
])

/**
 * Claim tokens (design.md, claim flow): written into a site's container by the in-container
 * agent; whoever can read it proves access to the site's files and trades it for a site-scoped
 * key. Single use, 1 hour. Only a SHA-256 of the token is stored.
 */
export const claimTokens = sqliteTable('claim_tokens', {
  id: text('id').primaryKey(),
  siteId: text('site_id').notNull().references(() => sites.id),
  tokenHash: text('token_hash').notNull(),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  /** When it was traded for a key; a used token never works again. */
  usedAt: integer('used_at'),
  keyId: text('key_id'),
}, (t) => [uniqueIndex('claim_tokens_hash').on(t.tokenHash), index('claim_tokens_site').on(t.siteId, t.expiresAt)])

/** One row per deploy call (design.md, Sites: deploy); the work runs as a job. */
export const deployments = sqliteTable('deployments', {
  id: text('id').primaryKey(),
  siteId: text('site_id').notNull().references(() => sites.id),
  /** queued, running, succeeded, failed. */
  status: text('status', { enum: DEPLOYMENT_STATUSES }).notNull(),
  /** What the reload and the site's deploy hook printed, capped. */
  output: text('output').notNull().default(''),
  error: text('error'),
  createdAt: integer('created_at').notNull(),
  startedAt: integer('started_at'),
  finishedAt: integer('finished_at'),
}, (t) => [index('deployments_site').on(t.siteId, t.createdAt)])

/**
 * Archives of a site's files: snapshots (taken on request, vps and dedicated) and the automatic
 * daily backups (every plan, 7 kept). The bytes live in the archive store driver under
 * `storageKey`; this row is what the API lists.
 */
export const archives = sqliteTable('archives', {
  id: text('id').primaryKey(),
  siteId: text('site_id').notNull().references(() => sites.id),
  /** snapshot or backup. */
  kind: text('kind', { enum: ARCHIVE_KINDS }).notNull(),
  /** creating, ready, restoring (being put back on the site), failed, deleted (being removed). */
  status: text('status', { enum: ARCHIVE_STATUSES }).notNull(),
  storageKey: text('storage_key'),
  sizeBytes: integer('size_bytes'),
  fileCount: integer('file_count'),
  error: text('error'),
  createdAt: integer('created_at').notNull(),
  completedAt: integer('completed_at'),
  /** When it was last restored onto the site. */
  restoredAt: integer('restored_at'),
}, (t) => [index('archives_site').on(t.siteId, t.kind, t.createdAt)])

/** Per site and UTC day, the edge's request counts (drained from memory every 30 s). */
export const siteMetricsDaily = sqliteTable('site_metrics_daily', {
  siteId: text('site_id').notNull(),
  /** `YYYY-MM-DD`, UTC. */
  day: text('day').notNull(),
  requests: integer('requests').notNull().default(0),
  bytesOut: integer('bytes_out').notNull().default(0),
  status2xx: integer('status_2xx').notNull().default(0),
  status3xx: integer('status_3xx').notNull().default(0),
  status4xx: integer('status_4xx').notNull().default(0),
  status5xx: integer('status_5xx').notNull().default(0),
  /** JSON array of counts per edge latency bucket (src/edge/metrics.ts). */
  latency: text('latency').notNull().default('[]'),
}, (t) => [primaryKey({ columns: [t.siteId, t.day] })])

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

/**
 * Slow work with a state the API can show: provisioning a site, and later deploys, snapshots,
 * certificates. A job left `running` by a crash is run again on start; every job is idempotent.
 */
export const jobs = sqliteTable('jobs', {
  id: text('id').primaryKey(),
  kind: text('kind').notNull(),
  subjectId: text('subject_id').notNull(),
  /** queued, running, succeeded, failed. */
  status: text('status', { enum: JOB_STATUSES }).notNull(),
  attempts: integer('attempts').notNull().default(0),
  error: text('error'),
  runAfter: integer('run_after').notNull(),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [index('jobs_pending').on(t.status, t.runAfter)])

/** One row per counted request of a rate-limited operation (sliding window log). */
export const rateLimitHits = sqliteTable('rate_limit_hits', {
  bucket: text('bucket').notNull(),
  client: text('client').notNull(),
  at: integer('at').notNull(),
  expiresAt: integer('expires_at').notNull(),
}, (t) => [index('rate_limit_hits_lookup').on(t.bucket, t.client, t.at), index('rate_limit_hits_expiry').on(t.expiresAt)])

/** Small facts about the store itself, such as when the plan catalog was seeded. */
export const settings = sqliteTable('settings', {
  key: text('key').primaryKey(),
  value: text('value').notNull(),
})

export type AccountRow = typeof accounts.$inferSelect
export type ApiKeyRow = typeof apiKeys.$inferSelect
export type PlanRow = typeof plans.$inferSelect
export type SiteRow = typeof sites.$inferSelect
export type SubscriptionRow = typeof subscriptions.$inferSelect
export type CheckoutRow = typeof checkoutSessions.$inferSelect
export type PaymentRow = typeof payments.$inferSelect
export type JobRow = typeof jobs.$inferSelect
export type ClaimTokenRow = typeof claimTokens.$inferSelect
export type DeploymentRow = typeof deployments.$inferSelect
export type ArchiveRow = typeof archives.$inferSelect
export type SiteMetricsDayRow = typeof siteMetricsDaily.$inferSelect

/**
 * Domains registered through the registrar driver (design.md, DNS, domains, TLS). Berth serves
 * their DNS; `site_id` is the site they are linked to, whose edge route they join.
 */
export const domains = sqliteTable('domains', {
  id: text('id').primaryKey(),
  accountId: text('account_id').notNull().references(() => accounts.id),
  /** Lower-case A-label, no trailing dot. */
  name: text('name').notNull(),
  status: text('status', { enum: DOMAIN_STATUSES }).notNull(),
  /** `sandbox` or `opensrs`, and whether nothing was registered for real. */
  registrar: text('registrar').notNull(),
  sandbox: integer('sandbox', { mode: 'boolean' }).notNull(),
  registrarRef: text('registrar_ref').notNull(),
  expiresAt: integer('expires_at').notNull(),
  autoRenew: integer('auto_renew', { mode: 'boolean' }).notNull().default(true),
  locked: integer('locked', { mode: 'boolean' }).notNull().default(true),
  privacy: integer('privacy', { mode: 'boolean' }).notNull().default(true),
  /** JSON array of the nameservers set at the registrar. */
  nameservers: text('nameservers').notNull(),
  siteId: text('site_id').references(() => sites.id),
  /** CAD cents per year of renewal, quoted at registration. */
  renewCents: integer('renew_cents').notNull(),
  /** True for the free first domain of an annual plan with free_domain_annual. */
  freeFirstYear: integer('free_first_year', { mode: 'boolean' }).notNull().default(false),
  /** The WHOIS contact as given (JSON), for renewals and transfers. */
  contact: text('contact').notNull(),
  caLegalType: text('ca_legal_type'),
  /** Why the last automatic renewal failed, while it keeps failing. */
  renewError: text('renew_error'),
  /** Why the registration failed (status `failed`); null otherwise. */
  error: text('error'),
  /** Years asked for at registration (the registration job uses it). */
  periodYears: integer('period_years').notNull().default(1),
  /** When the registration job first sent the registration to the registrar (a registration is never sent blindly twice). */
  registerSentAt: integer('register_sent_at'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [uniqueIndex('domains_name').on(t.name), index('domains_account').on(t.accountId), index('domains_site').on(t.siteId), index('domains_expiry').on(t.autoRenew, t.expiresAt)])

/**
 * DNS records agents create, under a site's own name (`site_id`) or a domain (`domain_id`).
 * A record is addressed by (type, subdomain, value): creating it twice changes nothing.
 */
export const dnsRecords = sqliteTable('dns_records', {
  id: text('id').primaryKey(),
  siteId: text('site_id').references(() => sites.id),
  domainId: text('domain_id').references(() => domains.id),
  type: text('type', { enum: DNS_RECORD_TYPES }).notNull(),
  /** Relative to the owner's name, lower-case; empty for the name itself. */
  subdomain: text('subdomain').notNull(),
  /** Canonical text form (`10 mail.example.com` for MX). */
  value: text('value').notNull(),
  ttl: integer('ttl').notNull(),
  createdAt: integer('created_at').notNull(),
}, (t) => [
  uniqueIndex('dns_records_site_key').on(t.siteId, t.type, t.subdomain, t.value).where(sql`site_id IS NOT NULL`),
  uniqueIndex('dns_records_domain_key').on(t.domainId, t.type, t.subdomain, t.value).where(sql`domain_id IS NOT NULL`),
])

export type DomainRow = typeof domains.$inferSelect
export type DnsRecordRow = typeof dnsRecords.$inferSelect

/**
 * A certificate Berth wants and what it has of it (design.md, Certificates): one per site name
 * (or one wildcard for all of them), per linked domain (with its www) and for the API's host.
 * The certificate and its key are files in `{data_dir}/tls/`, named by `id`, mode 0600.
 */
export const certificates = sqliteTable('certificates', {
  id: text('id').primaryKey(),
  /** What it is for: `site:{id}`, `domain:{id}`, `wildcard` or `api`; one row each. */
  subject: text('subject').notNull(),
  /** JSON array of the names, the first being the common name. */
  names: text('names').notNull(),
  challenge: text('challenge', { enum: ['http-01', 'dns-01'] }).notNull(),
  status: text('status', { enum: ['pending', 'active', 'renewing', 'failed'] }).notNull(),
  serial: text('serial'),
  notBefore: integer('not_before'),
  notAfter: integer('not_after'),
  /** When to renew: the CA's ARI window or two thirds of the lifetime. */
  renewAt: integer('renew_at'),
  lastError: text('last_error'),
  /** Failures in a row, for the back-off (1 h doubling to 24 h). */
  failures: integer('failures').notNull().default(0),
  nextAttemptAt: integer('next_attempt_at').notNull(),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [uniqueIndex('certificates_subject').on(t.subject), index('certificates_due').on(t.nextAttemptAt)])

export type CertificateRow = typeof certificates.$inferSelect

/** Tokens a site's AI modules used at the provider, per calendar month (UTC, `2026-11`). */
export const aiUsage = sqliteTable('ai_usage', {
  siteId: text('site_id').notNull(),
  month: text('month').notNull(),
  tokens: integer('tokens').notNull().default(0),
  calls: integer('calls').notNull().default(0),
}, (t) => [primaryKey({ columns: [t.siteId, t.month] })])

/**
 * Tokens held for model calls under way (AiBudget): a call reserves the most it can cost before it
 * is sent, and the reservation is settled to what it cost (or released) when it ends. A
 * reservation left by a crash stops counting at `expires_at`.
 */
export const aiReservations = sqliteTable('ai_reservations', {
  id: text('id').primaryKey(),
  siteId: text('site_id').notNull(),
  tokens: integer('tokens').notNull(),
  expiresAt: integer('expires_at').notNull(),
}, (t) => [index('ai_reservations_site').on(t.siteId), index('ai_reservations_expiry').on(t.expiresAt)])

/** The translation module's pages, per site, path and language, for one version of the source page. */
export const translations = sqliteTable('translations', {
  siteId: text('site_id').notNull(),
  path: text('path').notNull(),
  lang: text('lang').notNull(),
  /** SHA-256 of the source page the translation was made from: a changed page is translated again. */
  sourceHash: text('source_hash').notNull(),
  html: text('html').notNull(),
  createdAt: integer('created_at').notNull(),
}, (t) => [primaryKey({ columns: [t.siteId, t.path, t.lang] })])
