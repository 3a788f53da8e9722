import type { Logger } from '../lib/logger'

/**
 * What the edge does with a site's traffic; `serving` is the only state that reaches a container.
 * `recovering`: the site should serve but its container is not running (it died or was removed;
 * it is being brought back), so the edge answers at once instead of trying it.
 */
export type SiteState = 'serving' | 'recovering' | 'stopped' | 'suspended' | 'provisioning' | 'pending_deletion' | 'failed'

/** The answer to "who serves this host?", given by the site directory on every request. */
export interface SiteTarget {
  siteId: string
  slug: string
  state: SiteState
  /**
   * Where the container answers plain HTTP/1.1; required for `serving`. `fallbackPort`: an app
   * site served straight from its web process (`port`) has its front there, tried when `port`
   * refuses the connection (the process is restarting, or not up yet after a start).
   */
  upstream?: { address: string; port: number; fallbackPort?: number }
  /** The AI modules that act on this site's traffic (on, included in its plan, available); absent when none. */
  modules?: SiteModuleFlags
  /**
   * True when the edge writes this site's access log, because its web server cannot log the
   * request target as sent (berth/static's busybox httpd logs the path without the query).
   */
  accessLog?: true
  /**
   * The site's Strict-Transport-Security value (`max-age=N`), sent on its answers over HTTPS
   * only (the owner's `hsts_max_age`); absent when the owner has not turned HSTS on.
   */
  hsts?: string
}

/** One request forwarded to a site's container, for its access log (nginx's combined format). */
export interface EdgeAccessRecord {
  /** Arrival time, epoch milliseconds. */
  at: number
  clientAddress: string
  method: string
  /** The request target as the client sent it: path and query (nginx's `$request_uri`). */
  target: string
  status: number
  /** Response body bytes handed to the client. */
  bytesOut: number
  referer: string | null
  userAgent: string | null
}

/**
 * Where the edge reports the requests of sites whose access log it writes; must not block. The
 * record is the edge's own: read it during the call, keep none of it by reference.
 */
export interface EdgeAccessLogSink {
  write(site: SiteTarget, request: EdgeAccessRecord): void
}

export interface SiteModuleFlags {
  seo: boolean
  chatbot: boolean
  translation: boolean
}

/** One request as the edge saw it, for the per-site, per-day metrics. */
export interface EdgeRequestRecord {
  /** Status sent to the client (the edge's own 502/503/504 pages included). */
  status: number
  /** Response body bytes handed to the client connection, counted while streaming. */
  bytesOut: number
  /** From the request's arrival to the end of the response body (or the client's abort). */
  durationMs: number
  /** Arrival time, epoch milliseconds; decides the UTC day the request counts in. */
  at: number
}

/**
 * Where the edge reports each request; both run on the hot path and must not block. Every
 * request to a known site gets one `begin` (as it arrives) and one `record` (once answered in
 * full), so that the requests in flight are the difference.
 */
export interface EdgeMetricsSink {
  /** A request to the site arrived; `bytesIn` is its body's Content-Length (0 when none is declared). */
  begin(siteId: string, bytesIn: number): void
  record(siteId: string, request: EdgeRequestRecord): void
}

export interface EdgeProxyDeps {
  /** Maps a Host header to its site; `null` for a host no site answers to. */
  resolve(host: string): SiteTarget | null | Promise<SiteTarget | null>
  metrics: EdgeMetricsSink
  /** Gets each forwarded request of the sites marked `accessLog`. */
  accessLog?: EdgeAccessLogSink
  log: Logger
  /** Berth's public origin, linked from the edge's own pages. */
  siteUrl: string
  /** Longest wait for the first byte of the container's response; 504 after it. Default 60 s. */
  upstreamTimeoutMs?: number
  /**
   * Longest wait for a connection to a container; 502 after it. Default 2 s: containers are on
   * this host, so a connect that takes longer is to an address nobody holds any more.
   */
  connectTimeoutMs?: number
  /** Idle keep-alive connections kept per container (nginx's `keepalive`). Default 256. */
  maxIdlePerUpstream?: number
  /** An idle keep-alive connection is closed after this long. Default 30 s. */
  idleTimeoutMs?: number
  /** What the AI modules do to the traffic of sites that have one on (src/modules/edge.ts). */
  modules?: (request: Request, site: SiteTarget, modules: SiteModuleFlags, clientAddress: string, forward: (request: Request) => Promise<Response>) => Promise<Response>
}

export interface EdgeProxy {
  /** Answers one request for a site host name (the request's Host header unless given); never throws. */
  handle(request: Request, clientAddress: string, host?: string): Promise<Response>
  /** Connections opened to containers so far, and how many are idle now (for tests and metrics). */
  stats(): { connectionsOpened: number; idleConnections: number }
  /**
   * Nothing is sent to `address:port` any more (an app site's web process moved to another
   * port): its kept-alive connections are closed, the busy ones once their request is done.
   */
  retireUpstream(address: string, port: number): void
  /** Closes every idle upstream connection and stops the edge's timers. */
  close(): void
}
