import { Type as t, type Static } from '@sinclair/typebox'
import { Nullable } from '../schema'

export const LogTypeSchema = t.Union([t.Literal('error'), t.Literal('access'), t.Literal('php'), t.Literal('app'), t.Literal('audit')], {
  default: 'error',
  description: "error: the web server's errors; access: one line per request; php: PHP-FPM and PHP errors (empty on shared plans, which have no PHP); app: what an app's processes print on stdout and stderr, one line each as `TIME NAME: line` (NAME web, a worker, or berth for the supervisor's own: starts, exits, restarts), empty for a site that never deployed a source; audit: every exec, console session and admin shell run in the site, one line each (who, when, how it ended, the command; kept 90 days; docs/api.md, Logs).",
})

export const SiteLog = t.Object({
  type: LogTypeSchema,
  file: Nullable(t.String({ description: "The log file under the site's home (files API path), or null when the site's image has no such log, and for audit (kept in Berth's store). The current file: when it holds fewer matching lines than asked, its rotated files (FILE.1, FILE.2 ..., logs.rotate_keep of them) are read after it, newest first." })),
  lines: t.Array(t.String(), { description: 'Oldest first, newest last, across the current file and its rotated ones.' }),
})
export type SiteLog = Static<typeof SiteLog>
