import { SITE_OWNER, type OpenHome } from '../../drivers/files/types'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { EdgeAccessLogSink, EdgeAccessRecord, SiteTarget } from '../../edge/types'
import type { Logger } from '../../lib/logger'
import { EDGE_ACCESS_LOG } from './sources'

/** Lines wait in memory at most this long before they are appended to the site's log. */
const FLUSH_EVERY_MS = 250
/** Past this many bytes waiting for one site (a flood, or a log that cannot be written), new lines are dropped. */
const MAX_PENDING_BYTES = 1 << 20
/** A site whose log cannot be written is logged at most this often. */
const WARN_EVERY_MS = 60_000

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

/**
 * The access log of sites whose web server cannot write one that says what was asked
 * (berth/static: busybox httpd logs the path without the query), written by the edge into the
 * site's `~/logs/access.log` in nginx's `combined` format, the format of the PHP image's nginx:
 * every plan's log has the request target as the client sent it, query included (nginx's
 * `$request_uri`).
 *
 * `write` runs on the edge's hot path: it only formats the line and keeps it. Every 250 ms the
 * lines of each site are appended in one write, through SiteHome (no symlink followed, nothing
 * but a regular file opened, made as the site user). A log that cannot be written (the tenant
 * put a folder there, the disk is full) loses those lines and is logged once a minute.
 *
 * @example
 * const log = new EdgeAccessLog(runtime, logger, openSiteHome)
 * createEdgeProxy({ ..., accessLog: log })
 */
export class EdgeAccessLog implements EdgeAccessLogSink {
  private pending = new Map<string, { lines: string[]; bytes: number }>()
  private warned = new Map<string, number>()
  private timer: ReturnType<typeof setInterval>
  private flushing: Promise<void> = Promise.resolve()

  constructor(private runtime: Pick<ContainerRuntime, 'homePath'>, private log: Logger, private openHome: OpenHome) {
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS)
    this.timer.unref?.()
  }

  write(site: SiteTarget, request: EdgeAccessRecord): void {
    const line = combinedLine(request)
    let queue = this.pending.get(site.slug)
    if (!queue) this.pending.set(site.slug, (queue = { lines: [], bytes: 0 }))
    if (queue.bytes + line.length > MAX_PENDING_BYTES) return
    queue.lines.push(line)
    queue.bytes += line.length
  }

  /** Appends every waiting line to its site's log; resolves once written (or given up). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.appendPending())
    return this.flushing
  }

  /** Stops the timer and writes what waits. */
  async close(): Promise<void> {
    clearInterval(this.timer)
    await this.flush()
  }

  private async appendPending(): Promise<void> {
    if (this.pending.size === 0) return
    const batch = this.pending
    this.pending = new Map()
    for (const [slug, { lines }] of batch) {
      try {
        const home = await this.openHome(await this.runtime.homePath(slug), SITE_OWNER)
        try {
          await home.append(EDGE_ACCESS_LOG, Buffer.from(lines.join(''), 'utf8'))
        } finally {
          home.close()
        }
      } catch (err) {
        const now = Date.now()
        if (now - (this.warned.get(slug) ?? -Infinity) < WARN_EVERY_MS) continue
        if (this.warned.size > 10_000) this.warned.clear()
        this.warned.set(slug, now)
        this.log.warn("could not write a site's access log", { site: slug, lines: lines.length, error: (err as Error).message })
      }
    }
  }
}

/**
 * One line of nginx's `combined` format: `$remote_addr - $remote_user [$time_local] "$request"
 * $status $body_bytes_sent "$http_referer" "$http_user_agent"`, in UTC, with the escaping nginx
 * applies to logged values (`"`, `\` and bytes outside printable ASCII as `\xHH`), so that no
 * request can forge a line or a field.
 *
 * @example
 * combinedLine({ at: Date.UTC(2026, 10, 25, 17, 3, 4), clientAddress: '203.0.113.9', method: 'GET',
 *   target: '/search?q=boats', status: 200, bytesOut: 512, referer: null, userAgent: 'curl/8.5.0' })
 * // '203.0.113.9 - - [25/Nov/2026:17:03:04 +0000] "GET /search?q=boats HTTP/1.1" 200 512 "-" "curl/8.5.0"\n'
 */
export function combinedLine(r: EdgeAccessRecord): string {
  const request = `${r.method} ${r.target} HTTP/1.1`
  return `${escapeValue(r.clientAddress)} - - [${timeLocal(r.at)}] "${escapeValue(request)}" ${r.status} ${r.bytesOut} "${escapeValue(r.referer ?? '-')}" "${escapeValue(r.userAgent ?? '-')}"\n`
}

/** The last second formatted by `timeLocal`: requests come in runs within one second. */
let lastSecond = -1
let lastTimeLocal = ''

/** nginx's `$time_local` in UTC: `25/Nov/2026:17:03:04 +0000`; formatted once per second. */
function timeLocal(at: number): string {
  const second = Math.floor(at / 1000)
  if (second !== lastSecond) {
    lastTimeLocal = formatTimeLocal(second * 1000)
    lastSecond = second
  }
  return lastTimeLocal
}

function formatTimeLocal(at: number): string {
  const d = new Date(at)
  const two = (n: number) => String(n).padStart(2, '0')
  return `${two(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())} +0000`
}

/** As nginx escapes variables in access logs (ngx_http_log_escape): `"`, `\`, control and non-ASCII bytes as \xHH. */
function escapeValue(value: string): string {
  if (/^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/.test(value)) return value
  let out = ''
  for (const byte of Buffer.from(value, 'utf8')) {
    out += byte >= 0x20 && byte < 0x7f && byte !== 0x22 && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}
