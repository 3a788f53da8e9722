import { createHash, timingSafeEqual } from 'node:crypto'
import { EXPOSITION_CONTENT_TYPE } from '../../domain/prometheus'
import type { Logger } from '../../lib/logger'

/** The path Prometheus scrapes (its default `metrics_path`). */
export const METRICS_PATH = '/metrics'

/** True for /metrics, with or without a query (Prometheus may add `params`). */
export function isMetricsPath(path: string): boolean {
  return path === METRICS_PATH || path.startsWith(`${METRICS_PATH}?`)
}

export interface MetricsHandlerOptions {
  /** The `metrics.token` a request must bear; null: no token asked (the separate listener). */
  token: string | null
  scrape(): Promise<string>
  log: Logger
}

/**
 * GET /metrics: the exposition document. With a token, only a request bearing it
 * (`Authorization: Bearer TOKEN`, Prometheus's `authorization` or `bearer_token` scrape setting)
 * gets it; any other answers 401 with `WWW-Authenticate: Bearer` (RFC 6750 3). The token is
 * compared in constant time: both sides are hashed first, so neither its length nor its bytes
 * show in the time taken.
 */
export function metricsHandler(o: MetricsHandlerOptions) {
  const want = o.token === null ? null : digest(o.token)
  return async (request: Request): Promise<Response> => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return text(405, 'Metrics are read with GET.\n', { allow: 'GET, HEAD' })
    if (want !== null && !bears(request.headers.get('authorization'), want)) {
      return text(401, 'This needs Authorization: Bearer with metrics.token.\n', { 'www-authenticate': 'Bearer realm="berth metrics"' })
    }
    try {
      return new Response(await o.scrape(), { headers: { 'content-type': EXPOSITION_CONTENT_TYPE, 'cache-control': 'no-store' } })
    } catch (err) {
      o.log.error('metrics could not be gathered', { error: (err as Error).message })
      return text(500, 'Metrics could not be gathered; see the log.\n')
    }
  }
}

/** True when the header is `Bearer <token>` with the token whose digest is `want`. */
function bears(header: string | null, want: Buffer): boolean {
  const match = header ? /^bearer\s+(\S+)\s*$/i.exec(header) : null
  return timingSafeEqual(digest(match ? match[1]! : ''), want) && match !== null
}

const digest = (s: string) => createHash('sha256').update(s).digest()

const text = (status: number, body: string, headers: Record<string, string> = {}) =>
  new Response(body, { status, headers: { 'content-type': 'text/plain', ...headers } })
