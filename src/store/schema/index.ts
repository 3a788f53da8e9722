/**
 * The store's tables, one file per area. Times are integer milliseconds since the epoch (shown
 * as ISO 8601 by the API); ids are UUIDs as text; lists are JSON text. Changing a table means
 * `bun run db:generate` and adding the new file to migrations/index.ts; drizzle.config.ts reads
 * the tables from this index. A new table also gets its area in store/areas.ts.
 */
export * from './accounts'
export * from './billing'
export * from './sites'
export * from './names'
export * from './modules'
export * from './operations'
export * from './offsite'
export * from './audit'
export * from './cluster'
export * from './databases'
export * from './events'
export * from './webhooks'
