import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { APP_RUNTIMES, STORED_ARCHIVE_KINDS, ARCHIVE_STATUSES, DEPLOYMENT_STATUSES, SITE_STATUSES, SUSPENDERS } from '../../core/enums'
import { accounts } from './accounts'
import { plans, subscriptions } from './billing'

/** Sites and what belongs to each: claim tokens, deployments, archives, daily request metrics. */

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
  /**
   * Who suspended a `suspended` site: `billing` (its subscription lapsed), `admin` (berth sites
   * suspend) or `account` (the admin suspended its account: berth accounts suspend); null
   * otherwise. An admin's suspension is lifted by the admin only (berth sites resume, berth
   * accounts resume), never by a payment. Kept while the site is pending deletion, so that a
   * restore puts the suspension back.
   */
  suspendedBy: text('suspended_by', { enum: SUSPENDERS }),
  /** Why, in the admin's words (berth sites suspend --reason) or billing's; shown to the owner. */
  suspendedReason: text('suspended_reason'),
  /** HSTS for the site's HTTPS answers: the max-age in seconds, or null for none (the default, as nginx and Caddy). */
  hstsMaxAge: integer('hsts_max_age'),
  /**
   * An app site's runtime (issue 39): set by its first deployment with a source, which moves the
   * site to the app image for good; null for a site that never had one (its plan's image, as before).
   */
  runtime: text('runtime', { enum: APP_RUNTIMES }),
  /** The deployment whose release an app site serves (`~/app/releases/{id}`), or null. */
  liveDeploymentId: text('live_deployment_id'),
  /**
   * The port the live release's web process listens on in its container (the supervisor's slot,
   * 3000-3009), which the edge connects to directly on this box; null: the container's front on
   * 8080 (no web process, or an image that does not say). Set by each switch and settings push.
   */
  webPort: integer('web_port'),
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
  /** The archive of the site's files as this deployment put them in place (what a rollback puts back), or null. */
  archiveId: text('archive_id'),
  /** For a rollback: the earlier deployment whose files it put back. */
  rollbackOf: text('rollback_of'),
  /**
   * Where a deployment with a source got its tree (issue 39), as JSON: `{"kind":"archive",
   * "format":"gzip"|"zip"}`, `{"kind":"git","url":...,"ref":...}` or `{"kind":"push","ref":...}`;
   * null for a deploy of the home as it is (spec part 4).
   */
  source: text('source'),
  /** The commit a git or push deployment built, once fetched. */
  commit: text('commit'),
  /** The runtime its release was detected or declared as, once built. */
  runtime: text('runtime', { enum: APP_RUNTIMES }),
}, (t) => [index('deployments_site').on(t.siteId, t.createdAt)])

/**
 * Archives of a site's files: snapshots (taken on request, vps and dedicated) and the automatic
 * daily backups (every plan, 7 kept). The bytes live in the archive store driver under
 * `storageKey`; this row is what the API lists.
 */
export const archives = sqliteTable('archives', {
  id: text('id').primaryKey(),
  siteId: text('site_id').notNull().references(() => sites.id),
  /** snapshot, backup or deployment (the files a deployment put in place; deployments.archive_id). */
  kind: text('kind', { enum: STORED_ARCHIVE_KINDS }).notNull(),
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

export type SiteRow = typeof sites.$inferSelect
export type ClaimTokenRow = typeof claimTokens.$inferSelect
export type DeploymentRow = typeof deployments.$inferSelect
export type ArchiveRow = typeof archives.$inferSelect
export type SiteMetricsDayRow = typeof siteMetricsDaily.$inferSelect

/**
 * A site's settings and secrets (issue 39): variables of its app, build, deploy hook and exec. A
 * plain value is kept as written; a secret's only as `sealed` (AES-256-GCM under the box's own
 * key, DATA_DIR/secrets.key, outside this store), never shown again in full.
 */
export const siteEnv = sqliteTable('site_env', {
  siteId: text('site_id').notNull().references(() => sites.id),
  name: text('name').notNull(),
  /** The value of a plain variable; null for a secret. */
  value: text('value'),
  /** A secret's value sealed (base64 of nonce, ciphertext and tag); null for a plain variable. */
  sealed: text('sealed'),
  secret: integer('secret', { mode: 'boolean' }).notNull().default(false),
  updatedAt: integer('updated_at').notNull(),
}, (t) => [primaryKey({ columns: [t.siteId, t.name] })])
