/**
 * The store's tables grouped by what in-memory caches depend on. A write to a table moves its
 * area's version (`Store.versionOf`); a cache reads the versions of the areas it is made from
 * only, so a rate-limit hit or a job's progress leaves the DNS zones and the edge's directory be.
 * A new table gets its area here; a write to a table found in none moves every area.
 */
export const AREAS = {
  /** Accounts and their API keys. */
  accounts: ['accounts', 'api_keys'],
  plans: ['plans'],
  /** Subscriptions, checkouts and money. */
  billing: ['subscriptions', 'checkout_sessions', 'payments', 'local_charges', 'processor_events'],
  /** The sites themselves (slug, status, plan, modules). */
  sites: ['sites'],
  /** What belongs to a site and no cache reads: claim tokens, deployments, archives, metrics, its settings and secrets, its databases. */
  site_records: ['claim_tokens', 'deployments', 'archives', 'site_metrics_daily', 'site_env', 'site_databases'],
  /** Registered domains and DNS records. */
  names: ['domains', 'dns_records'],
  certificates: ['certificates'],
  /** The AI modules' usage, reservations and translations. */
  modules: ['ai_usage', 'ai_reservations', 'translations'],
  jobs: ['jobs'],
  rate_limits: ['rate_limit_hits'],
  settings: ['settings', 'berth_migrations'],
  /** The copies off the box and their queue (domain/offsite). */
  offsite: ['offsite_copies'],
  /** The audit trail of commands run in sites (domain/audit): no cache reads it. */
  audit: ['audit_events'],
  /** The cluster's nodes and join tokens (drivers/cluster/types.ts): the runtime's placement reads them. */
  cluster: ['nodes', 'node_join_tokens'],
  /** The event log (domain/events): no cache reads it. */
  events: ['events'],
  /** The webhook endpoints and their deliveries (domain/webhooks): no cache reads them. */
  webhooks: ['webhook_endpoints', 'webhook_deliveries'],
} as const satisfies Record<string, readonly string[]>

export type Area = keyof typeof AREAS

/** Each area's place in AREAS; its bit is `1 << index`. */
export const AREA_INDEX = Object.fromEntries(Object.keys(AREAS).map((area, i) => [area, i])) as Record<Area, number>
export const ALL_AREAS = (1 << Object.keys(AREAS).length) - 1

const BIT_OF_TABLE = new Map<string, number>(Object.entries(AREAS).flatMap(([area, tables]) => tables.map((t) => [t, 1 << AREA_INDEX[area as Area]] as const)))

// The table a write statement names: drizzle's `insert into "sites"`, `update "sites"`, `delete
// from "sites"`, and the plain SQL of repositories (`INSERT OR IGNORE INTO x`, `UPDATE x SET`).
const WRITE = /^\s*(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+(?:main\.)?["`[]?(\w+)/i
const READ = /^\s*(?:select|pragma|explain)\b/i

/**
 * The areas a statement's SQL writes, as bits: 0 for a read; the table's area for a write to
 * one table; every area for anything else (DDL, a WITH, a table in no area), so that a cache
 * is never kept past a change it cannot place.
 */
export function areasWrittenBy(sql: string): number {
  if (READ.test(sql)) return 0
  const table = WRITE.exec(sql)?.[1]
  return (table && BIT_OF_TABLE.get(table.toLowerCase())) || ALL_AREAS
}
