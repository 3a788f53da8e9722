import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'
import { ACME_CHALLENGE_PATH } from './domain/tls'
import { WEBHOOK_PATH } from './api/webhooks/handler'
import { CONSOLE_PATH } from './domain/console'
import { isMetricsPath } from './api/prometheus/handler'
import { isClusterJoinPath } from './api/cluster/join'

/**
 * Where a request to Berth's listeners goes: read LISTENER_ROUTES top to bottom, the first entry
 * whose `match` is true answers. Both listeners (plain HTTP and HTTPS) use the same table; only
 * the HTTPS redirect looks at which one a request came in on. The last entry, the API app, takes
 * everything left; inside it, src/api/app.ts `routeGroups` lists every feature's routes and the
 * paths each one owns, in the order they are mounted.
 *
 * This table runs before any framework, on every request, so each `match` is a string test or a
 * cached look-up: the edge's throughput is measured through it (bench:edge, bench:seo).
 */
export const LISTENER_ROUTES: readonly ListenerRoute[] = [
  {
    name: 'acme-challenge',
    why: 'Let\'s Encrypt checks a certificate order over plain HTTP at this path, for any name, before the name has a certificate (and so before the redirect below applies to it). An unknown token goes on down the table.',
    match: (r, t) => r.path.startsWith(ACME_CHALLENGE_PATH) && t.acmeAnswer(r.path.slice(ACME_CHALLENGE_PATH.length)) !== undefined,
    handle: (r, t) => new Response(t.acmeAnswer(r.path.slice(ACME_CHALLENGE_PATH.length))!, { headers: { 'content-type': 'text/plain' } }),
  },
  {
    name: 'https-redirect',
    why: 'Once a name has a certificate, its plain-HTTP requests go to HTTPS (308, path and query kept): sites and Berth\'s own pages alike, the challenge path excepted.',
    match: (r, t) => !r.secure && !r.path.startsWith(ACME_CHALLENGE_PATH) && t.httpsOrigin(r.host) !== null,
    handle: (r, t) => new Response(null, { status: 308, headers: { location: `${t.httpsOrigin(r.host)!}${r.path}` } }),
  },
  {
    name: 'edge',
    why: 'A Host naming a site (`{slug}.{sites_domain}` or a domain linked to one) is that site\'s traffic, whatever the path: proxied to its container (src/edge/proxy.ts). Before every path of Berth\'s own, so that a site owns all of its URLs.',
    match: (r, t) => t.isSiteHost(r.host),
    handle: (r, t) => t.edge(r.request, r.server, r.host),
  },
  {
    name: 'plans-catalog',
    why: 'GET /api/v1/plans/ (or without the slash) with no query, the most requested public document: the catalog\'s cached JSON, without Elysia\'s per-request pipeline, which alone held the route to 0.67 of a bare Bun.serve (bench/, issue 2; target 0.8). Any other form of the request (a query, another method) stays with the API app, which owns the route and its schema.',
    match: (r) => r.request.method === 'GET' && isPlansList(r.path),
    handle: (_r, t) => t.plansList(),
  },
  {
    name: 'webhooks',
    why: 'The payment processor\'s deliveries, /webhooks/{processor}/: outside the API\'s envelope, body parser and rate limits, since the signature is over the raw bytes (src/api/webhooks/handler.ts).',
    match: (r) => r.path.startsWith('/webhooks/') && WEBHOOK_PATH.test(r.path),
    handle: (r, t) => t.webhook(r.request, WEBHOOK_PATH.exec(r.path)![1]!),
  },
  {
    name: 'mcp',
    why: 'The MCP endpoint, /mcp/ (or /mcp): JSON-RPC sessions whose tool calls run as REST requests through the API app (src/api/mcp/server.ts).',
    match: (r) => isMcpPath(r.path),
    handle: (r, t) => t.mcp(r.request, r.server, r.secure),
  },
  {
    name: 'console',
    why: 'A site\'s console (issue 26, src/console/): its page /console/{ticket}, the page\'s scripts /console/assets/, and its WebSocket /console/{ticket}/socket, which the Elysia app cannot upgrade. On Berth\'s own host only (a site\'s Host went to the edge above), so no site\'s page is ever the console\'s origin.',
    match: (r) => r.path.startsWith(CONSOLE_PATH),
    handle: (r, t) => t.console(r.request, r.server, r.secure),
  },
  {
    name: 'metrics',
    why: 'GET /metrics for Prometheus (issue 27, src/api/prometheus/), when metrics.token is set: only with `Authorization: Bearer` of it, outside the API\'s envelope, keys and rate limits (a scraper holds no API key, and the text format is not JSON). Without the token the path stays the API app\'s (a 404); metrics.listen serves it on a listener of its own instead.',
    match: (r, t) => t.metrics !== null && isMetricsPath(r.path),
    handle: (r, t) => t.metrics!(r.request),
  },
  {
    name: 'cluster-join',
    why: '/cluster/v1/join when cluster.enabled (issue 28, src/api/cluster/join.ts): a join over plain HTTP would trust whatever answered, so here it is refused (426 join_needs_tls) with the URL of the join listener (cluster.join_port, TLS pinned to the control plane\'s certificate, src/server.ts startJoinListener), which serves the join itself. With the cluster off the path goes on to the API app (a 404).',
    match: (r, t) => t.clusterJoin != null && isClusterJoinPath(r.path),
    handle: (r, t) => t.clusterJoin!(r.request),
  },
  {
    name: 'api',
    why: 'Everything else: the Elysia app (src/api/app.ts): /api/v1/ and its documents, the discovery documents and pages (/.well-known/, /llms.txt...), and the processor\'s pages (/pay/, /billing/portal/) when it has any.',
    match: () => true,
    handle: (r, t) => t.api(r.request, r.server, r.secure),
  },
]

/** One request as the table sees it: its path and Host read once, for every entry. */
export interface Incoming {
  request: Request
  /** The path and query, as sent ("/api/v1/plans/?x=1"). */
  path: string
  /** The Host header, as sent; '' when there is none. */
  host: string
  /** True on the HTTPS listener. */
  secure: boolean
  server: ListenerServer
}

export interface ListenerRoute {
  /** A short name for the entry (the tests name entries by it). */
  name: string
  /** What the entry serves, and why it sits where it does in the order. */
  why: string
  match(r: Incoming, t: ListenerTargets): boolean
  handle(r: Incoming, t: ListenerTargets): Response | undefined | Promise<Response | undefined>
}

/** What the table's entries send requests to; src/server.ts builds it from the services. */
export interface ListenerTargets {
  /** The key authorization for an HTTP-01 challenge token, or undefined when none is pending. */
  acmeAnswer(token: string): string | undefined
  /**
   * `https://{name}[:{port}]` when the HTTPS listener serves a certificate for the name a Host
   * header gives; null otherwise (no HTTPS listener, or no certificate for it yet).
   */
  httpsOrigin(host: string): string | null
  /** True when a Host header names a site, not Berth itself. */
  isSiteHost(host: string): boolean
  edge(request: Request, server: ListenerServer, host: string): Response | Promise<Response>
  plansList(): Response
  webhook(request: Request, processor: string): Response | Promise<Response>
  mcp(request: Request, server: ListenerServer, secure: boolean): Response | Promise<Response>
  /** The console's page, its scripts and its WebSocket (upgraded here; undefined once upgraded). */
  console(request: Request, server: ListenerServer, secure: boolean): Response | undefined | Promise<Response | undefined>
  /** GET /metrics behind metrics.token; null when the token is empty (off on these listeners). */
  metrics: ((request: Request) => Promise<Response>) | null
  /** POST /cluster/v1/join (api/cluster/join.ts); null or absent when cluster.enabled is false. */
  clusterJoin?: ((request: Request) => Promise<Response>) | null
  api(request: Request, server: ListenerServer, secure: boolean): Response | Promise<Response>
}

/**
 * What a WebSocket accepted by a listener carries: the handlers of the door that upgraded it
 * (the console's, src/console/socket.ts), so that both listeners' one `websocket` option
 * (LISTENER_WEBSOCKET) serves any door.
 */
export interface SocketDoor {
  open(ws: ListenerSocket): void
  message(ws: ListenerSocket, message: string | Buffer): void
  /** The socket's send buffer emptied after a send answered -1 (backpressure). */
  drain(ws: ListenerSocket): void
  close(ws: ListenerSocket, code: number, reason: string): void
}
export type ListenerSocket = ServerWebSocket<SocketDoor>
export type ListenerServer = Server<SocketDoor>

/** The listeners' `websocket` option: each socket's own door answers. */
export const LISTENER_WEBSOCKET: WebSocketHandler<SocketDoor> = {
  open: (ws) => ws.data.open(ws),
  message: (ws, message) => ws.data.message(ws, message),
  drain: (ws) => ws.data.drain(ws),
  close: (ws, code, reason) => ws.data.close(ws, code, reason),
  // A console's keystrokes and resizes are small; a paste is the largest input (1 MiB).
  maxPayloadLength: 1024 * 1024,
  // The most Bun allows; a console session is ended by its own idle limit (15 min), and Bun's
  // pings keep a quiet socket alive through proxies meanwhile.
  idleTimeout: 960,
  sendPings: true,
  // Terminal output is sent as it comes, in small frames: compressing each costs more than it saves.
  perMessageDeflate: false,
}

/**
 * The listeners' fetch handler: the first entry of `routes` that matches answers. `secure` is
 * true for the HTTPS listener.
 */
export function dispatcher(targets: ListenerTargets, routes: readonly ListenerRoute[] = LISTENER_ROUTES) {
  return (request: Request, server: ListenerServer, secure = false): Response | undefined | Promise<Response | undefined> => {
    const r: Incoming = { request, path: pathOf(request.url), host: request.headers.get('host') ?? '', secure, server }
    for (const route of routes) {
      if (route.match(r, targets)) return route.handle(r, targets)
    }
    return new Response('Not found.\n', { status: 404, headers: { 'content-type': 'text/plain' } })
  }
}

/** True for /api/v1/plans/ (or without the slash) with no query: the catalog's fast path. */
export function isPlansList(path: string): boolean {
  return path === '/api/v1/plans/' || path === '/api/v1/plans'
}

/** The path and query of a request URL (what a redirect keeps). */
export function pathOf(url: string): string {
  return url.slice(url.indexOf('/', url.indexOf('//') + 2))
}

/** True for the MCP endpoint, `/mcp/` or `/mcp`, with or without a query. */
function isMcpPath(path: string): boolean {
  const query = path.indexOf('?')
  const bare = query === -1 ? path : path.slice(0, query)
  return bare === '/mcp/' || bare === '/mcp'
}
