import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { AUDIT_ACTORS, AUDIT_KINDS, AUDIT_RUN_AS } from '../../core/enums'
import { accounts } from './accounts'
import { sites } from './sites'

/**
 * The audit trail (issue 26; domain/audit): one row per exec of the API, console session and
 * admin shell run in a site. The row is written when the command starts, so a crash leaves it
 * (with no `ended_at`), and completed when it ends. Kept 90 days (AUDIT_RETENTION_DAYS), and
 * removed with the site's other data when the site is reaped.
 */
export const auditEvents = sqliteTable('audit_events', {
  id: text('id').primaryKey(),
  siteId: text('site_id').notNull().references(() => sites.id),
  /** The site's owner when it ran. */
  accountId: text('account_id').notNull().references(() => accounts.id),
  /** exec, console, shell. */
  kind: text('kind', { enum: AUDIT_KINDS }).notNull(),
  /** key (keyId and keyPrefix set) or admin (adminUser set). */
  actor: text('actor', { enum: AUDIT_ACTORS }).notNull(),
  keyId: text('key_id'),
  /** The key's first 12 characters, as key listings show it. */
  keyPrefix: text('key_prefix'),
  /** The Unix user who ran `berth sites shell`. */
  adminUser: text('admin_user'),
  /** site (uid 1000) or root. */
  runAs: text('run_as', { enum: AUDIT_RUN_AS }).notNull().default('site'),
  /** The command line, at most its first AUDIT_COMMAND_BYTES bytes; null for an interactive session. */
  command: text('command'),
  /** The whole command line's size in bytes when `command` holds only its beginning; null when it is whole. */
  commandBytes: integer('command_bytes'),
  startedAt: integer('started_at').notNull(),
  /** Null while it runs, and for ever when the process recording it died first. */
  endedAt: integer('ended_at'),
  exitCode: integer('exit_code'),
  /** Why it ended when not by itself ('timed out', 'key revoked', 'idle 15 min'...). */
  reason: text('reason'),
}, (t) => [
  index('audit_events_site').on(t.siteId, t.startedAt),
  // Retention deletes by age across sites (domain/audit/service.ts, prune).
  index('audit_events_started').on(t.startedAt),
])

export type AuditEventRow = typeof auditEvents.$inferSelect
