import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import { DB_ENGINES, DB_STATES } from '../../core/enums'
import { sites } from './sites'

/**
 * The sites' managed databases (issue 40, domain/databases): one row per database, kept while it
 * is `deleted` in its grace (its name stays taken) and removed with the site.
 */
export const siteDatabases = sqliteTable('site_databases', {
  id: text('id').primaryKey(),
  siteId: text('site_id').notNull().references(() => sites.id),
  /** `^[a-z][a-z0-9_]{0,30}$`: the database's name in the engine, the host's `db-{name}`, the variable's `{NAME}_URL`. */
  name: text('name').notNull(),
  engine: text('engine', { enum: DB_ENGINES }).notNull(),
  state: text('state', { enum: DB_STATES }).notNull(),
  /** What the running server reported at its last start ("15.10"); null before it first answered. */
  version: text('version'),
  /** The password of the user `site`, sealed with the box key (drivers/secrets) for (site, `database:{name}`). */
  sealed: text('sealed').notNull(),
  /** The limits it was made with, from the plan's features.databases. */
  memoryMb: integer('memory_mb').notNull(),
  diskGb: integer('disk_gb').notNull(),
  /** Why it failed, for `failed`. */
  error: text('error'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
  deletedAt: integer('deleted_at'),
}, (t) => [uniqueIndex('site_databases_name').on(t.siteId, t.name), index('site_databases_site').on(t.siteId, t.createdAt)])

export type SiteDatabaseRow = typeof siteDatabases.$inferSelect
