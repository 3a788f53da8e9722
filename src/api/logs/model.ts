import { t, type Static } from 'elysia'
import { Nullable, Query, QueryInteger } from '../http/schemas'

export const LogTypeSchema = t.Union([t.Literal('error'), t.Literal('access'), t.Literal('php')], {
  default: 'error',
  description: "error: the web server's errors; access: one line per request; php: PHP-FPM and PHP errors (empty on shared plans, which have no PHP).",
})

export const MAX_SEARCH_LENGTH = 200

export const LogQuery = Query({
  type: t.Optional(LogTypeSchema),
  lines: t.Optional(QueryInteger('lines', { minimum: 1, maximum: 500, default: 100, description: 'How many of the newest matching lines to return.' })),
  search: t.Optional(t.String({ maxLength: MAX_SEARCH_LENGTH, description: 'Only lines containing this text (plain, case-sensitive substring).' })),
})

export const SiteLog = t.Object({
  type: LogTypeSchema,
  file: Nullable(t.String({ description: "The log file under the site's home (files API path), or null when the site's image has no such log." })),
  lines: t.Array(t.String(), { description: 'Oldest first, newest last.' }),
})
export type SiteLog = Static<typeof SiteLog>
