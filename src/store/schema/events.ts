import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { EVENT_TYPES } from '../../core/enums'

/**
 * The event log (issue 41; domain/events): one row per state change an owner would want to hear
 * of, written in the same transaction as the change. `seq` orders them (and is what a cursor
 * means); `id` is what the API shows and `after=` takes. No foreign keys: an event outlives the
 * site it tells of (its slug is kept as it was), until it is 30 days old (EVENT_RETENTION_DAYS).
 */
export const events = sqliteTable('events', {
  seq: integer('seq').primaryKey({ autoIncrement: true }),
  /** `evt_` and 24 hex characters. */
  id: text('id').notNull().unique(),
  type: text('type', { enum: EVENT_TYPES }).notNull(),
  accountId: text('account_id').notNull(),
  siteId: text('site_id'),
  /** The site's slug when the event was recorded, shown even after the site is purged. */
  siteSlug: text('site_slug'),
  /** JSON: the object as the API shows it, no secrets. */
  data: text('data').notNull(),
  createdAt: integer('created_at').notNull(),
}, (t) => [
  index('events_account').on(t.accountId, t.seq),
  index('events_site').on(t.siteId, t.seq),
  // Retention deletes by age (domain/events/log.ts, prune).
  index('events_created').on(t.createdAt),
])

export type EventRow = typeof events.$inferSelect
