import { index, integer, primaryKey, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** The AI modules' tables: token usage, reservations and translated pages. */

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
