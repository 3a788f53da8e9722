import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { DNS_RECORD_TYPES, DOMAIN_STATUSES } from '../../core/enums'
import { accounts } from './accounts'
import { sites } from './sites'

/** Names: registered domains, the DNS records agents create, and certificates. */

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

export type DomainRow = typeof domains.$inferSelect
export type DnsRecordRow = typeof dnsRecords.$inferSelect
export type CertificateRow = typeof certificates.$inferSelect
