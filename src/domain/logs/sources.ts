import type { HostingType } from '../../core/enums'

/** The logs read from files in the site's home. */
export type FileLogType = 'error' | 'access' | 'php' | 'app'
/** Every log type of GET /sites/{slug}/logs/: the files, and the audit trail (from the store, domain/audit). */
export type LogType = FileLogType | 'audit'

/** Where one log type of one site image is read from, and which of its lines count. */
export interface LogSource {
  /** Path of the file under the site's home, as the agent sees it; null when the image has none. */
  file: string | null
  /** Builds a fresh line filter per request (filters may keep state); undefined keeps every line. */
  filter?: () => (line: string) => boolean
}

/** The log of an app's processes (berth-supervise, drivers/runtime/image-app.ts). */
export const APP_LOG = 'logs/app.log'

/** An app log line's process name (`2026-11-29T08:00:00.123Z web: listening`), or null. */
export function appLineProcess(line: string): string | null {
  const m = /^\S+ ([a-z][a-z0-9_-]{0,29}):/.exec(line)
  return m ? m[1]! : null
}

/** The access log the edge writes for sites whose web server cannot (domain/logs/access-log.ts). */
export const EDGE_ACCESS_LOG = 'logs/access.log'

/**
 * The logs of each site image (src/drivers/runtime/image-*.ts), all under ~/logs:
 *
 * berth/php (vps, dedicated): `error` is nginx's error.log, `access` nginx's access.log
 * (combined format), `php` PHP-FPM's php.log (FPM notices and PHP errors, warnings and
 * error_log() calls).
 *
 * berth/static (shared): busybox httpd logs a request's path without its query, so the edge
 * writes the access log (`access`, access.log, in nginx's combined format like the PHP image's:
 * see `edgeWritesAccessLog`). httpd -vv writes its own lines to error.log, two per request
 * (`[addr]:port: url:/path`, then `[addr]:port: response:404`); `error` is that file without the
 * successful requests: the url and response lines of every request answered 400 or more, and
 * any other message httpd writes there. There is no PHP on this image, so `php` is always empty
 * (`file: null`).
 */
export function logSource(hostingType: HostingType, type: FileLogType, runtime: string | null = null): LogSource {
  // An app's processes (issue 39): the supervisor of berth/app writes their lines, and its own, to
  // ~/logs/app.log as `ISO-TIME NAME: line`. A site that never deployed a source has no such file.
  if (type === 'app') return { file: APP_LOG }
  if (edgeWritesAccessLog(hostingType, runtime)) {
    if (type === 'php') return { file: null }
    if (type === 'error') return { file: 'logs/error.log', filter: busyboxErrors }
    return { file: EDGE_ACCESS_LOG }
  }
  return { file: { error: 'logs/error.log', access: 'logs/access.log', php: 'logs/php.log' }[type] }
}

/**
 * True when the site's web server cannot log the request target (berth/static), so the edge
 * writes its access log. A site that deployed a source (`runtime` set) runs berth/app on any
 * plan, whose front (nginx) writes access.log and error.log itself, as berth/php does.
 */
export function edgeWritesAccessLog(hostingType: HostingType, runtime: string | null = null): boolean {
  return hostingType === 'shared' && runtime === null
}

const BUSYBOX_RECORD = /^(.*?): (url|response):(\S*)/
/** Connections remembered while pairing; a log never has this many requests in flight. */
const MAX_PENDING = 10_000

/**
 * The static image's error lines, fed newest first: a `response:` line decides whether the
 * `url:` line of the same connection (above it) is kept too. A url line whose response is not
 * in the log (a request still running) is left out.
 */
export function busyboxErrors(): (line: string) => boolean {
  const failed = new Set<string>()
  return (line) => {
    const record = BUSYBOX_RECORD.exec(line)
    if (!record) return true
    const [, peer, kind, value] = record as unknown as [string, string, string, string]
    if (kind === 'response') {
      const status = Number(value)
      if (!(status >= 400)) return false
      if (failed.size >= MAX_PENDING) failed.clear()
      failed.add(peer)
      return true
    }
    return failed.delete(peer)
  }
}

/**
 * The command run in a site's container (as the site user) after its logs were rotated, so its
 * servers open their logs again by name: nginx (berth/php) and PHP-FPM's master reopen theirs on
 * USR1 (their pid files are in /tmp). PHP's own error_log and the images' line loggers (busybox
 * httpd's and sshd's output, image-static.ts and image-php.ts) open the file for each line, and
 * the edge's access log for each write, so they need nothing. Image-agnostic: a pid file that is
 * not there is skipped, so it works on every image.
 */
export const REOPEN_LOGS: readonly string[] = ['/bin/sh', '-c', 'for p in /tmp/nginx.pid /tmp/php-fpm.pid; do [ -s "$p" ] && kill -USR1 "$(cat "$p")" 2>/dev/null; done; exit 0']

/** The name of the `n`th rotated file of the log at `file` (1 the newest): `logs/error.log.1`. */
export function rotatedFile(file: string, n: number): string {
  return `${file}.${n}`
}
