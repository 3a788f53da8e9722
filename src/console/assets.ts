import XTERM_JS from '@xterm/xterm/lib/xterm.js' with { type: 'text' }
import XTERM_CSS from '@xterm/xterm/css/xterm.css' with { type: 'text' }
import FIT_JS from '@xterm/addon-fit/lib/addon-fit.js' with { type: 'text' }
import CLIENT_JS from './client.js' with { type: 'text' }
import PAGE_CSS from './page.css' with { type: 'text' }

/**
 * The console page's scripts and styles, embedded in the binary at build time (text imports):
 * xterm.js and its fit addon from npm (pinned in package.json), the page's own script and style.
 * Served from Berth's own origin under /console/assets/, never a CDN: the page's CSP allows
 * scripts from 'self' only.
 */
const ASSETS: Record<string, { body: string; type: string }> = {
  'xterm.js': { body: XTERM_JS, type: 'text/javascript; charset=utf-8' },
  'addon-fit.js': { body: FIT_JS, type: 'text/javascript; charset=utf-8' },
  'console.js': { body: CLIENT_JS, type: 'text/javascript; charset=utf-8' },
  'xterm.css': { body: XTERM_CSS, type: 'text/css; charset=utf-8' },
  'console.css': { body: PAGE_CSS, type: 'text/css; charset=utf-8' },
}

/** A short digest of every asset, in their URLs: a new build's page never gets an old script from a cache. */
export const ASSETS_VERSION = Bun.hash(Object.values(ASSETS).map((a) => a.body).join('\0')).toString(36)

export const ASSETS_PATH = '/console/assets/'

/** The asset at `path` (below ASSETS_PATH, `?v=` ignored), or null. */
export function assetResponse(path: string): Response | null {
  const name = path.slice(ASSETS_PATH.length).replace(/\?.*$/, '')
  const asset = Object.hasOwn(ASSETS, name) ? ASSETS[name] : undefined
  if (!asset) return null
  return new Response(asset.body, {
    headers: {
      'content-type': asset.type,
      'cache-control': 'public, max-age=86400, immutable',
      'x-content-type-options': 'nosniff',
      'cross-origin-resource-policy': 'same-origin',
    },
  })
}
