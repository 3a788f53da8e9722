import { UpstreamError, type Exchange } from './exchange'
import { Forwarding, type EdgeContext } from './forwarding'
import { requestHead } from './headers'
import { pageResponse, renderPage, type PageKind, type StatusPage } from './pages'
import type { EdgeAccessRecord, EdgeProxy, EdgeProxyDeps, SiteState, SiteTarget } from './types'
import { UpstreamPool } from './upstream'

export { parseSiteHost } from './host'
export type { EdgeAccessLogSink, EdgeAccessRecord, EdgeMetricsSink, EdgeProxy, EdgeProxyDeps, EdgeRequestRecord, SiteState, SiteTarget } from './types'

const DEFAULT_TIMEOUT_MS = 60_000
/**
 * Idle connections kept per container: as many as an app site's front keeps to its app (256), so
 * a site busier than 64 requests at once keeps its connections between bursts (at 64, 128 clients
 * made the edge close and reopen 1,338 connections in 10 s; docs/benchmarks.md, "Apps (issue 39)").
 */
const MAX_IDLE_PER_UPSTREAM = 256
/** Containers are on this host: a connect slower than this (one SYN retransmit, at 1 s, fits) is to an address nobody holds. */
const DEFAULT_CONNECT_TIMEOUT_MS = 2_000
/** A failing site is logged at most this often, so a dead container under load cannot flood the log. */
const LOG_EVERY_MS = 10_000
/** nginx logs a request whose client went away before the answer as 499; the metrics do the same. */
const CLIENT_CLOSED = 499

/**
 * The edge proxy: answers requests for `{slug}.{sites_domain}` from the site's container over
 * kept-alive HTTP/1.1 connections, or with a short page of its own when the site is not serving.
 *
 * Containers are reached by a small HTTP/1.1 client on Bun.connect rather than fetch(): per
 * request it costs the same CPU, and it lets the edge count the bytes each client receives,
 * hand a whole small body to the listener in one piece, and own the connection pool
 * (docs/benchmarks.md, "Edge proxy", has the measurements).
 *
 * @example
 * const edge = createEdgeProxy({ resolve, metrics, log, siteUrl: 'http://localhost:8080' })
 * Bun.serve({ fetch: (req, srv) => edge.handle(req, srv.requestIP(req)!.address) })
 */
export function createEdgeProxy(deps: EdgeProxyDeps): EdgeProxy {
  const timeoutMs = deps.upstreamTimeoutMs ?? DEFAULT_TIMEOUT_MS
  const idleTimeoutMs = deps.idleTimeoutMs ?? 30_000
  const pool = new UpstreamPool(deps.maxIdlePerUpstream ?? MAX_IDLE_PER_UPSTREAM, idleTimeoutMs, Math.min(deps.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, timeoutMs))
  const waiting = new Set<Exchange>()
  const lastLogged = new Map<string, number>()
  const sitePages = new Map<PageKind, StatusPage>()

  const tick = Math.max(10, Math.min(1000, Math.floor(timeoutMs / 4), Math.floor(idleTimeoutMs / 4)))
  const timer = setInterval(() => {
    const now = performance.now()
    for (const exchange of waiting) if (now > exchange.deadline) exchange.timeout()
    pool.sweep(now)
    if (lastLogged.size > 1000) lastLogged.clear()
  }, tick)
  timer.unref?.()

  /** Pages of known sites do not name the host, so each is rendered once. */
  const sitePage = (kind: PageKind): StatusPage => {
    let page = sitePages.get(kind)
    if (!page) sitePages.set(kind, (page = renderPage(kind, '', deps.siteUrl)))
    return page
  }

  const answerWithPage = (site: SiteTarget, kind: PageKind, start: number, at: number): Response => {
    const page = sitePage(kind)
    deps.metrics.record(site.siteId, { status: page.status, bytesOut: page.body.length, durationMs: performance.now() - start, at })
    return pageResponse(page)
  }

  const logFailure = (site: SiteTarget, error: unknown) => {
    const now = performance.now()
    if (now - (lastLogged.get(site.siteId) ?? -Infinity) < LOG_EVERY_MS) return
    lastLogged.set(site.siteId, now)
    const kind = error instanceof UpstreamError ? error.kind : 'internal'
    const fields = { site: site.slug, upstream: site.upstream ? `${site.upstream.address}:${site.upstream.port}` : null, failure: kind, error: (error as Error).message }
    if (kind === 'internal') deps.log.error('edge proxy failed', { ...fields, stack: (error as Error).stack })
    else deps.log.warn('site container failed to answer', fields)
  }

  const failurePage = (site: SiteTarget, error: UpstreamError, start: number, at: number): Response => {
    if (error.kind === 'client_aborted') {
      deps.metrics.record(site.siteId, { status: CLIENT_CLOSED, bytesOut: 0, durationMs: performance.now() - start, at })
      return new Response(null, { status: 400 })
    }
    logFailure(site, error)
    return answerWithPage(site, error.kind === 'timeout' ? 'gateway_timeout' : 'bad_gateway', start, at)
  }

  const ctx: EdgeContext = { pool, waiting, timeoutMs, metrics: deps.metrics, accessLog: deps.accessLog, failurePage }

  /**
   * Sends the request to the site's container; resolves with its response or an error page.
   * `logged` is the access log entry of the request as the client sent it (before any module
   * changed it), for sites whose log the edge writes.
   */
  const forward = (request: Request, site: SiteTarget, host: string, clientAddress: string, start: number, at: number, logged: EdgeAccessRecord | null): Promise<Response> => {
    const { address, port } = site.upstream!
    const body = request.body
    const length = request.headers.get('content-length')
    const url = request.url
    const framing = body === null ? (length === null ? 'none' : 0) : length === null ? 'chunked' : Number(length)
    const text = requestHead(request.headers, {
      method: request.method,
      target: originForm(url),
      host,
      clientAddress,
      proto: url.startsWith('https:') ? 'https' : 'http',
      framing,
    })
    // Header values are bytes (latin1); a head with any byte above 0x7f goes out as bytes, the
    // usual all-ASCII head as a string, which spares an allocation per request.
    const head = Buffer.byteLength(text, 'utf8') === text.length ? text : Buffer.from(text, 'latin1')
    return new Forwarding(ctx, site, `${address}:${port}`, request.method, head, body, framing === 'chunked', start, at, logged).begin()
  }

  const route = (request: Request, site: SiteTarget | null, host: string, clientAddress: string, start: number, at: number): Response | Promise<Response> => {
    if (site === null) return pageResponse(renderPage('unknown', host, deps.siteUrl))
    deps.metrics.begin(site.siteId, declaredLength(request))
    if (site.state !== 'serving' || !site.upstream) return answerWithPage(site, pageFor(site.state), start, at)
    const logged = site.accessLog && deps.accessLog ? loggedRequest(request, clientAddress, at) : null
    if (site.modules && deps.modules) return viaModules(request, site, host, clientAddress, start, at, logged)
    return forward(request, site, host, clientAddress, start, at, logged)
  }

  /** A module may answer a request itself; such an answer is counted here, a forwarded one by the forwarding. */
  const viaModules = (request: Request, site: SiteTarget, host: string, clientAddress: string, start: number, at: number, logged: EdgeAccessRecord | null): Promise<Response> => {
    let forwarded = false
    return deps.modules!(request, site, site.modules!, clientAddress, (r) => {
      forwarded = true
      return forward(r, site, host, clientAddress, start, at, logged)
    }).then((response) => {
      if (!forwarded) deps.metrics.record(site.siteId, { status: response.status, bytesOut: Number(response.headers.get('content-length') ?? 0) || 0, durationMs: performance.now() - start, at })
      return response
    }, (err: unknown) => internalError(host, site, err, start, at))
  }

  const internalError = (host: string, site: SiteTarget | null, err: unknown, start: number, at: number): Response => {
    if (site) return failurePage(site, new UpstreamError('internal', (err as Error).message), start, at)
    deps.log.error('edge proxy failed', { host, error: (err as Error).message, stack: (err as Error).stack })
    return pageResponse(renderPage('bad_gateway', '', deps.siteUrl))
  }

  const answer = (request: Request, site: SiteTarget | null, host: string, clientAddress: string, start: number, at: number): Response | Promise<Response> => {
    try {
      const response = route(request, site, host, clientAddress, start, at)
      // Only sites whose owner turned HSTS on pay for the header, and only over HTTPS (a browser
      // ignores it over plain HTTP, RFC 6797 section 8.1).
      return site?.hsts !== undefined && request.url.startsWith('https:') ? withHsts(response, site.hsts) : response
    } catch (err) {
      return internalError(host, site, err, start, at)
    }
  }

  return {
    // Not an async function: the common path hands back the exchange's own promise, one
    // allocation fewer per request than an async wrapper.
    handle(request, clientAddress, host = request.headers.get('host') ?? '') {
      const start = performance.now()
      const at = Date.now()
      let resolved: ReturnType<EdgeProxyDeps['resolve']>
      try {
        resolved = deps.resolve(host)
      } catch (err) {
        return Promise.resolve(internalError(host, null, err, start, at))
      }
      if (resolved instanceof Promise) {
        return resolved.then(
          (site) => answer(request, site, host, clientAddress, start, at),
          (err: unknown) => internalError(host, null, err, start, at),
        )
      }
      return Promise.resolve(answer(request, resolved, host, clientAddress, start, at))
    },
    stats: () => ({ connectionsOpened: pool.opened, idleConnections: pool.idleCount() }),
    retireUpstream: (address, port) => pool.retire(`${address}:${port}`),
    close() {
      clearInterval(timer)
      pool.close()
    },
  }
}

/** What the access log keeps of a request, taken as it arrived; the outcome is filled in when known. */
function loggedRequest(request: Request, clientAddress: string, at: number): EdgeAccessRecord {
  const h = request.headers
  return { at, clientAddress, method: request.method, target: originForm(request.url), status: 0, bytesOut: 0, referer: h.get('referer'), userAgent: h.get('user-agent') }
}

/** The request body's Content-Length; 0 when none is declared (no body, or a chunked one). */
function declaredLength(request: Request): number {
  const length = request.headers.get('content-length')
  return length === null ? 0 : Number(length) || 0
}

/**
 * The answer with the site's Strict-Transport-Security field. Every Response the edge hands out
 * is its own (built from the container's head, a module's rewrite or a page), so its fields can
 * be set; the head a container's answers share is copied into each, never changed here.
 */
function withHsts(response: Response | Promise<Response>, value: string): Response | Promise<Response> {
  if (response instanceof Promise) return response.then((r) => withHsts(r, value) as Response)
  try {
    response.headers.set('strict-transport-security', value)
    return response
  } catch {
    // Fields that cannot change (a Response a module took from fetch()): the same answer, copied.
    const copy = new Response(response.body, response)
    copy.headers.set('strict-transport-security', value)
    return copy
  }
}

/** A serving site without a known upstream has no container running: it shows as stopped. */
function pageFor(state: SiteState): PageKind {
  return state === 'serving' ? 'recovering' : state
}

/**
 * Path and query of the request URL for the request line (RFC 9112 section 3.2.1). Bun's
 * listener has already removed dot segments; a fragment, which no request line may carry, is cut.
 */
function originForm(url: string): string {
  const slash = url.indexOf('/', url.indexOf('//') + 2)
  if (slash === -1) return '/'
  const hash = url.indexOf('#', slash)
  return hash === -1 ? url.slice(slash) : url.slice(slash, hash)
}
