import { Type as t, type Static } from '@sinclair/typebox'
import { Nullable } from '../schema'

export const LogTypeSchema = t.Union([t.Literal('error'), t.Literal('access'), t.Literal('php')], {
  default: 'error',
  description: "error: the web server's errors; access: one line per request; php: PHP-FPM and PHP errors (empty on shared plans, which have no PHP).",
})

export const SiteLog = t.Object({
  type: LogTypeSchema,
  file: Nullable(t.String({ description: "The log file under the site's home (files API path), or null when the site's image has no such log." })),
  lines: t.Array(t.String(), { description: 'Oldest first, newest last.' }),
})
export type SiteLog = Static<typeof SiteLog>
