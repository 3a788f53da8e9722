import { SITE_OWNER, type OpenHome } from '../../drivers/files/types'
import { NodeUnreachableError } from '../../drivers/cluster/types'
import { RuntimeUnavailableError, type ContainerRuntime } from '../../drivers/runtime/types'
import type { EdgeAccessLogSink, EdgeAccessRecord, SiteTarget } from '../../edge/types'
import type { Logger } from '../../lib/logger'
import { EDGE_ACCESS_LOG } from './sources'

/** Lines wait in memory at most this long before they are appended to the site's log. */
const FLUSH_EVERY_MS = 250
/** Past this many bytes waiting for one site (a flood, or a node that does not answer), new lines are dropped and counted. */
export const MAX_PENDING_BYTES = 1 << 20
/** Past this many bytes waiting for all sites together, new lines are dropped and counted. */
export const MAX_TOTAL_PENDING_BYTES = 32 << 20
/** A site whose node did not answer is tried again this long after, its lines kept meanwhile. */
export const RETRY_UNREACHABLE_MS = 5_000
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
 * put a folder there, the disk is full) loses those lines and is logged once a minute. The log
 * of a site on a node that does not answer (its agent stopped, the network cut: NodeUnreachable
 * or RuntimeUnavailable) keeps its lines, tried again every RETRY_UNREACHABLE_MS without holding
 * up the other sites' logs, and written once the node answers; past MAX_PENDING_BYTES for the
 * site (about 5,000 lines) or MAX_TOTAL_PENDING_BYTES for all, newer lines are dropped, counted,
 * and the count logged when the kept ones are written.
 *
 * @example
 * const log = new EdgeAccessLog(runtime, logger, openSiteHome)
 * createEdgeProxy({ ..., accessLog: log })
 */
export class EdgeAccessLog implements EdgeAccessLogSink {
  private pending = new Map<string, { lines: string[]; bytes: number }>()
  private totalBytes = 0
  /** Per site: lines dropped past the bounds since its log was last written. */
  private dropped = new Map<string, number>()
  /** Per site whose node did not answer: when to try again. */
  private retryAt = new Map<string, number>()
  /** Sites whose append is under way outside the flush chain (their node did not answer before). */
  private writing = new Set<string>()
  private warned = new Map<string, number>()
  private timer: ReturnType<typeof setInterval>
  private flushing: Promise<void> = Promise.resolve()

  constructor(private runtime: Pick<ContainerRuntime, 'homePath'>, private log: Logger, private openHome: OpenHome, private o: { retryMs?: number } = {}) {
    this.timer = setInterval(() => void this.flush(), FLUSH_EVERY_MS)
    this.timer.unref?.()
  }

  write(site: SiteTarget, request: EdgeAccessRecord): void {
    const line = combinedLine(request)
    let queue = this.pending.get(site.slug)
    if (!queue) this.pending.set(site.slug, (queue = { lines: [], bytes: 0 }))
    if (queue.bytes + line.length > MAX_PENDING_BYTES || this.totalBytes + line.length > MAX_TOTAL_PENDING_BYTES) {
      this.dropped.set(site.slug, (this.dropped.get(site.slug) ?? 0) + 1)
      return
    }
    queue.lines.push(line)
    queue.bytes += line.length
    this.totalBytes += line.length
  }

  /** Lines dropped past the bounds for a site since its log was last written. */
  droppedLines(slug: string): number {
    return this.dropped.get(slug) ?? 0
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

  /**
   * Appends each site's waiting lines. A site whose node did not answer before is tried at most
   * every RETRY_UNREACHABLE_MS, outside the flush chain (its node may take the link's whole
   * timeout to fail again), so the other sites' lines are not held up.
   */
  private async appendPending(): Promise<void> {
    if (this.pending.size === 0) return
    const now = Date.now()
    for (const [slug, queue] of [...this.pending]) {
      if (this.writing.has(slug) || (this.retryAt.get(slug) ?? 0) > now) continue
      this.pending.delete(slug)
      this.totalBytes -= queue.bytes
      if (!this.retryAt.has(slug)) {
        await this.append(slug, queue)
        continue
      }
      this.writing.add(slug)
      void this.append(slug, queue).finally(() => this.writing.delete(slug))
    }
  }

  private async append(slug: string, queue: { lines: string[]; bytes: number }): Promise<void> {
    try {
      const home = await this.openHome(await this.runtime.homePath(slug), SITE_OWNER)
      try {
        await home.append(EDGE_ACCESS_LOG, Buffer.from(queue.lines.join(''), 'utf8'))
      } finally {
        home.close()
      }
      if (this.retryAt.delete(slug)) this.log.info("wrote a site's access log lines kept while its node did not answer", { site: slug, lines: queue.lines.length, dropped: this.dropped.get(slug) ?? 0 })
      this.dropped.delete(slug)
    } catch (err) {
      if (err instanceof NodeUnreachableError || err instanceof RuntimeUnavailableError) return this.keep(slug, queue, err)
      this.warnOnce(slug, "could not write a site's access log", { site: slug, lines: queue.lines.length, error: (err as Error).message })
    }
  }

  /** Puts the lines back before those that came since, within the bounds (the newest beyond are dropped, counted). */
  private keep(slug: string, queue: { lines: string[]; bytes: number }, err: Error): void {
    this.retryAt.set(slug, Date.now() + (this.o.retryMs ?? RETRY_UNREACHABLE_MS))
    const since = this.pending.get(slug) ?? { lines: [], bytes: 0 }
    this.totalBytes -= since.bytes
    const kept: { lines: string[]; bytes: number } = { lines: [], bytes: 0 }
    let dropped = 0
    for (const line of [...queue.lines, ...since.lines]) {
      if (kept.bytes + line.length > MAX_PENDING_BYTES || this.totalBytes + kept.bytes + line.length > MAX_TOTAL_PENDING_BYTES) dropped++
      else (kept.lines.push(line), (kept.bytes += line.length))
    }
    this.pending.set(slug, kept)
    this.totalBytes += kept.bytes
    if (dropped > 0) this.dropped.set(slug, (this.dropped.get(slug) ?? 0) + dropped)
    this.warnOnce(slug, "a site's node does not answer: its access log lines are kept until it does", { site: slug, kept: kept.lines.length, dropped: this.dropped.get(slug) ?? 0, error: err.message })
  }

  private warnOnce(slug: string, msg: string, fields: Record<string, unknown>): void {
    const now = Date.now()
    if (now - (this.warned.get(slug) ?? -Infinity) < WARN_EVERY_MS) return
    if (this.warned.size > 10_000) this.warned.clear()
    this.warned.set(slug, now)
    this.log.warn(msg, fields)
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
