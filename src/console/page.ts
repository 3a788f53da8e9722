import { randomBytes } from 'node:crypto'
import { html, type Html } from '../lib/html'
import { ASSETS_PATH, ASSETS_VERSION } from './assets'

/**
 * The console's CSP: scripts and styles from Berth's own origin only, no inline script, no
 * eval, no frames, no form, nothing fetched but the page's own WebSocket. xterm.js adds
 * `<style>` elements as it draws; the page's script gives each the nonce (`style-src 'nonce-'`),
 * so inline styles stay refused too.
 */
function csp(nonce: string, socketOrigin: string): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    `style-src 'self' 'nonce-${nonce}'`,
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src 'self' ${socketOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ')
}

/** The headers of every page of the console: never cached, never framed, never sent on as a referrer (the ticket is in the URL). */
function pageHeaders(nonce: string, socketOrigin: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': csp(nonce, socketOrigin),
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
  }
}

const asset = (name: string) => `${ASSETS_PATH}${name}?v=${ASSETS_VERSION}`

function layout(nonce: string, title: string, body: Html): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, interactive-widget=resizes-content">
<meta name="color-scheme" content="dark">
<title>${title}</title>
<link rel="stylesheet" href="${asset('xterm.css')}">
<link rel="stylesheet" href="${asset('console.css')}">
</head>
<body>
${body}
</body>
</html>
`.text
}

/**
 * The terminal page of a valid ticket: xterm.js fitted to the window, connected to
 * `{page}/socket` by the page's script (src/console/client.js), which also shows how the session
 * ended. `slug` names the site in the title.
 */
export function terminalPage(slug: string, socketOrigin: string): Response {
  const nonce = randomBytes(16).toString('base64')
  const body = html`<header>
<span class="site">Console of <strong>${slug}</strong></span>
<span id="status" role="status" aria-live="polite">Connecting…</span>
</header>
<main id="terminal" aria-label="Terminal"></main>
<nav id="keys" aria-label="Keys a phone keyboard lacks">
<button type="button" data-key="esc">Esc</button><button type="button" data-key="tab">Tab</button><button type="button" data-key="ctrl-c">Ctrl-C</button><button type="button" data-key="ctrl-d">Ctrl-D</button><button type="button" data-key="up" aria-label="Up">↑</button><button type="button" data-key="down" aria-label="Down">↓</button><button type="button" data-key="left" aria-label="Left">←</button><button type="button" data-key="right" aria-label="Right">→</button>
</nav>
<script src="${asset('xterm.js')}"></script>
<script src="${asset('addon-fit.js')}"></script>
<script src="${asset('console.js')}" nonce="${nonce}"></script>`
  return new Response(layout(nonce, `Console · ${slug}`, body), { headers: pageHeaders(nonce, socketOrigin) })
}

/** What a page of a ticket that cannot be used says, and its status. */
const REFUSALS = {
  used: { status: 410, title: 'This console link was already used', text: 'Each console link opens one session. Ask for a new one (POST /api/v1/sites/{slug}/console/, or the open_console tool).' },
  expired: { status: 410, title: 'This console link has expired', text: 'A console link works for 60 seconds after it was made. Ask for a new one (POST /api/v1/sites/{slug}/console/, or the open_console tool).' },
  unknown: { status: 404, title: 'No such console link', text: 'This link is not one Berth made, or Berth restarted since. Ask for a new one (POST /api/v1/sites/{slug}/console/, or the open_console tool).' },
} as const

/** The page of a ticket that cannot be used: says why and how to get a new one. */
export function refusedPage(why: keyof typeof REFUSALS, socketOrigin: string): Response {
  const nonce = randomBytes(16).toString('base64')
  const r = REFUSALS[why]
  const body = html`<div class="notice"><h1>${r.title}</h1><p>${r.text}</p></div>`
  return new Response(layout(nonce, r.title, body), { status: r.status, headers: pageHeaders(nonce, socketOrigin) })
}

/** The sentence of a refused ticket, for the WebSocket's refusal (text/plain). */
export const refusalText = (why: keyof typeof REFUSALS) => `${REFUSALS[why].title}. ${REFUSALS[why].text}\n`
export const refusalStatus = (why: keyof typeof REFUSALS) => REFUSALS[why].status
