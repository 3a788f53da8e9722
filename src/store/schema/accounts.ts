import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { ACCOUNT_STATUSES, KEY_REVOKED_REASONS } from '../../core/enums'

/** Accounts and their API keys. */

export const accounts = sqliteTable('accounts', {
  id: text('id').primaryKey(),
  email: text('email'),
  name: text('name').notNull(),
  firstName: text('first_name'),
  lastName: text('last_name'),
  language: text('language').notNull().default('en'),
  /** `active`, `suspended` (berth accounts suspend) or `anonymized` (after DELETE /account/delete/). */
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

export type AccountRow = typeof accounts.$inferSelect
export type ApiKeyRow = typeof apiKeys.$inferSelect
