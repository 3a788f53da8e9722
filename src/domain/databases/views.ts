import { Type as t, type Static } from '@sinclair/typebox'
import { DbEngineSchema, DbStateSchema } from '../../core/enums'
import { DateTime, Nullable } from '../schema'

const fields = {
  name: t.String({ examples: ['main'] }),
  engine: DbEngineSchema,
  version: Nullable(t.String({ description: 'What the running server reports (15.x, 10.11.x, 7.0.x); null before it first answered.', examples: ['15.10'] })),
  state: DbStateSchema,
  size_bytes: Nullable(t.Integer({ description: "Bytes of its data on its volume; null when its server is not running or the size cannot be read." })),
  memory_mb: t.Integer({ description: "Its memory limit (the plan's features.databases.memory_mb), on top of the site's." }),
  disk_gb: t.Integer({ description: "Its disk (the plan's features.databases.disk_gb), on top of the site's." }),
  host: t.String({ description: "The host the site's containers reach it at (its name on the site's own network; nothing outside the site reaches it).", examples: ['db-main'] }),
  port: t.Integer({ examples: [5432] }),
  user: t.String({ examples: ['site'] }),
  database: t.String({ description: 'The database in the server (redis: the db number, 0).', examples: ['main'] }),
  variables: t.Array(t.String(), {
    description: "The environment variables it gives the site's app, build, deploy hook and exec ({NAME}_URL, and DATABASE_URL for the first database); a name the site sets itself (PATCH env/) wins and is left out here. Secret: masked in outputs and logs.",
  }),
  created_at: DateTime(),
  error: Nullable(t.String({ description: 'Why it failed (the server\'s own words), for state failed; null otherwise.' })),
}

export const Database = t.Object(fields, {
  examples: [{
    name: 'main', engine: 'postgres', version: '15.10', state: 'available', size_bytes: 7811072, memory_mb: 256, disk_gb: 1, host: 'db-main', port: 5432,
    user: 'site', database: 'main', variables: ['MAIN_URL', 'DATABASE_URL'], created_at: '2026-11-24T12:00:00.000Z', error: null,
  }],
})

export const DatabaseWithUrl = t.Object({
  ...fields,
  url: t.String({ description: 'The connection URL with its password: shown on create, reveal and rotate-password only.', examples: ['postgres://site:Zx4S0o9fTq2m7LwB1yQe5cVh8kNa3rJd@db-main:5432/main'] }),
}, {
  examples: [{
    name: 'main', engine: 'postgres', version: '15.10', state: 'available', size_bytes: 7811072, memory_mb: 256, disk_gb: 1, host: 'db-main', port: 5432,
    user: 'site', database: 'main', variables: ['MAIN_URL', 'DATABASE_URL'], created_at: '2026-11-24T12:00:00.000Z', error: null,
    url: 'postgres://site:Zx4S0o9fTq2m7LwB1yQe5cVh8kNa3rJd@db-main:5432/main',
  }],
})

/** A database as its site's view shows it (GET /sites/{tenant_slug}/: `databases`). */
export const SiteDatabase = t.Object({ name: fields.name, engine: fields.engine, state: fields.state, size_bytes: fields.size_bytes })

/** A database's server log (GET .../databases/{name}/logs/). */
export const DatabaseLog = t.Object({
  name: fields.name,
  lines: t.Array(t.String(), { description: "The server's own lines (its container's output: starts, stops, errors, refused logins), oldest first, newest last; the site's database passwords masked as [secret]. Empty for a database with no server now (deleted, failed)." }),
}, {
  examples: [{ name: 'main', lines: ['2026-11-24 12:00:01.212 UTC [41] LOG:  database system is ready to accept connections', '2026-11-24 12:03:17.508 UTC [77] FATAL:  password authentication failed for user "site"'] }],
})

export type DatabaseView = Static<typeof Database>
export type DatabaseLogView = Static<typeof DatabaseLog>
export type SiteDatabaseSummary = Static<typeof SiteDatabase>
export type DatabaseWithUrlView = Static<typeof DatabaseWithUrl>
