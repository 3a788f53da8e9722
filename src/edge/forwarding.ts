import { Exchange, UpstreamError, type ExchangeHooks } from './exchange'
import type { EdgeAccessLogSink, EdgeAccessRecord, EdgeMetricsSink, SiteTarget } from './types'
import { ConnectTimeout, type UpstreamConnection, type UpstreamPool } from './upstream'

/** What every forwarded request shares: built once per edge. */
export interface EdgeContext {
  pool: UpstreamPool
  /** Exchanges waiting for their response; the edge's timer times them out. */
  waiting: Set<Exchange>
  timeoutMs: number
  metrics: EdgeMetricsSink
  accessLog?: EdgeAccessLogSink
  /** The answer when the container gave none. */
  failurePage(site: SiteTarget, error: UpstreamError, start: number, at: number): Response
}

/**
 * One request on its way to a site's container: picks a kept-alive connection or opens one,
 * runs the exchange, reports the outcome to the metrics (and the access log the edge writes), and retries once on a fresh
 * connection when a kept-alive one turns out to have been closed by the container (as nginx
 * does for requests without a body). A class rather than closures: one allocation per request
 * on the hot path.
 */
export class Forwarding implements ExchangeHooks {
  private retried = false
  /** Sent to the container's front (`upstream.fallbackPort`): the web process refused. */
  private onFront = false

  constructor(
    private ctx: EdgeContext,
    private site: SiteTarget,
    private key: string,
    private method: string,
    private head: string | Uint8Array,
    private body: ReadableStream<Uint8Array> | null,
    private chunked: boolean,
    private start: number,
    private at: number,
    /** The request's access log entry, its outcome filled in when known, for sites whose log the edge writes. */
    private logged: EdgeAccessRecord | null = null,
  ) {}

  /** Resolves with the container's response, or with the failure page; never rejects. */
  begin(): Promise<Response> {
    const idle = this.ctx.pool.take(this.key)
    return idle === null ? this.connectAndSend() : this.send(idle)
  }

  done(status: number, bytesOut: number): void {
    this.ctx.metrics.record(this.site.siteId, { status, bytesOut, durationMs: performance.now() - this.start, at: this.at })
    const logged = this.logged
    if (logged && this.ctx.accessLog) {
      // The request's own record, completed in place: no copy per request.
      logged.status = status
      logged.bytesOut = bytesOut
      this.ctx.accessLog.write(this.site, logged)
    }
  }

  settled(exchange: Exchange): void {
    this.ctx.waiting.delete(exchange)
  }

  failed(error: UpstreamError): Response | Promise<Response> {
    if (error.kind === 'stale' && !this.retried) {
      this.retried = true
      return this.connectAndSend()
    }
    return this.ctx.failurePage(this.site, error, this.start, this.at)
  }

  private send(conn: UpstreamConnection): Promise<Response> {
    const exchange = new Exchange(conn, this.ctx.pool, this.method, this.ctx.timeoutMs, this)
    this.ctx.waiting.add(exchange)
    return exchange.send(this.head, this.body, this.chunked)
  }

  private connectAndSend(): Promise<Response> {
    const { address, fallbackPort } = this.site.upstream!
    const port = this.onFront ? fallbackPort! : this.site.upstream!.port
    return this.ctx.pool.connect(this.key, address, port).then(
      (conn) => this.send(conn),
      (err: Error) => {
        // An app's web process that does not listen (restarting, starting): its container's front answers.
        if (fallbackPort !== undefined && port !== fallbackPort && !(err instanceof ConnectTimeout)) {
          this.onFront = true
          this.key = `${address}:${fallbackPort}`
          const idle = this.ctx.pool.take(this.key)
          return idle === null ? this.connectAndSend() : this.send(idle)
        }
        return this.ctx.failurePage(this.site, new UpstreamError(err instanceof ConnectTimeout ? 'timeout' : 'unreachable', err.message), this.start, this.at)
      },
    )
  }
}
