import { escapeHtml } from '../lib/html'
import type { SiteState } from './types'

/** Why the edge answered itself instead of the site's container. */
export type PageKind = Exclude<SiteState, 'serving'> | 'unknown' | 'bad_gateway' | 'gateway_timeout'

interface PageSpec {
  status: number
  title: string
  text: string
  /** Seconds for Retry-After (RFC 9110 section 10.2.3), where waiting helps. */
  retryAfter?: number
}

const PAGES: Record<PageKind, PageSpec> = {
  unknown: { status: 404, title: 'No site at {host}', text: 'Nothing is hosted at this address. Check the spelling of the name.' },
  provisioning: { status: 503, title: 'This site is being set up', text: 'It will be online in a moment; this page reloads on its own.', retryAfter: 10 },
  recovering: { status: 503, title: 'This site is being brought back', text: 'Its server stopped and is restarting; this page reloads on its own in a few seconds.', retryAfter: 2 },
  stopped: { status: 503, title: 'This site is not running', text: 'It has been stopped. Try again later.' },
  suspended: { status: 503, title: 'This site is suspended', text: 'Its hosting is on hold. It comes back, files intact, as soon as its owner settles it with the host.' },
  failed: { status: 503, title: 'This site is not available', text: 'It could not be started. Try again later.' },
  pending_deletion: { status: 404, title: 'This site has been scheduled for deletion', text: 'It no longer serves pages. Its owner can still restore it for a few days.' },
  bad_gateway: { status: 502, title: 'This site is not answering', text: 'Its web server could not be reached. Try again in a moment.', retryAfter: 5 },
  gateway_timeout: { status: 504, title: 'This site took too long to answer', text: 'Its web server did not respond in time. Try again in a moment.' },
}

/** A rendered page: its body is kept as bytes so that it can be reused and counted. */
export interface StatusPage {
  status: number
  body: Uint8Array<ArrayBuffer>
  headers: Record<string, string>
}

/**
 * The edge's own short HTML page for `kind`: no external assets, never cached, and, while a site
 * is being set up or brought back, a refresh so a visitor lands on the site once it is up. `host` appears only
 * on the unknown-host page.
 *
 * @example
 * renderPage('unknown', 'nope.localhost:8080', 'http://localhost:8080').status // 404
 */
export function renderPage(kind: PageKind, host: string, siteUrl: string): StatusPage {
  const spec = PAGES[kind]
  const title = escapeHtml(spec.title.replace('{host}', host))
  const refresh = kind === 'provisioning' || kind === 'recovering' ? `<meta http-equiv="refresh" content="${spec.retryAfter}">` : ''
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">${refresh}<title>${title}</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}small{color:#666}</style></head><body><h1>${title}</h1><p>${escapeHtml(spec.text)}</p><p><small>${spec.status} &middot; served by the hosting edge at <a href="${escapeHtml(siteUrl)}">${escapeHtml(siteUrl)}</a></small></p></body></html>\n`
  // x-berth-edge-page names the page: an answer of the edge's own, never the site's (a move asks
  // the edge with it when the site stopped and started serving, drivers/cluster/edge-probe.ts).
  const headers: Record<string, string> = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-berth-edge-page': kind }
  if (spec.retryAfter !== undefined) headers['retry-after'] = String(spec.retryAfter)
  return { status: spec.status, body: new TextEncoder().encode(html), headers }
}

/** A fresh Response for a rendered page. */
export function pageResponse(page: StatusPage): Response {
  return new Response(page.body, { status: page.status, headers: page.headers })
}
