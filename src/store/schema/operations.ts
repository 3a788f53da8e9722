import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'
import { JOB_STATUSES } from '../../core/enums'

/** The store's own bookkeeping: the job queue, rate-limit hits and settings. */

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
  /**
   * Unused since issue 37 (only berth serve runs jobs: no lease between processes); kept, always
   * null, so that an older binary's store needs no migration. Was: the wall time until which a
   * CLI command running a job itself vouched for it.
   */
  leaseUntil: integer('lease_until'),
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

export type JobRow = typeof jobs.$inferSelect
