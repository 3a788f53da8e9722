import type { EdgeProbe } from '../../domain/cluster'

/** The header on every page the edge answers itself (edge/pages.ts), naming which. */
export const EDGE_PAGE_HEADER = 'x-berth-edge-page'
/** Between two questions to the edge. */
const EVERY_MS = 25
/** One question's bound. */
const ASK_TIMEOUT_MS = 2_000
/**
 * The path asked: never redirected to HTTPS (dispatch.ts leaves the ACME challenge's path on plain
 * HTTP, and sends an unknown token on to the site), so the edge answers it on every box, with a
 * certificate or not.
 */
const PROBE_PATH = '/.well-known/acme-challenge/berth-edge-probe'

/**
 * berth serve's edge asked as a visitor reaches it, from an admin command on the same box
 * (`berth sites move`, `berth nodes drain --move`): GET over plain HTTP to `server.listen` (a
 * wildcard address asked on loopback) with the site's Host, `{slug}.{sites.domain}`. An answer
 * carrying EDGE_PAGE_HEADER is the edge's own page; any other came from the site's container.
 */
export function edgeProbe(listen: { hostname: string; port: number }, sitesDomain: string): EdgeProbe {
  const host = listen.hostname === '0.0.0.0' ? '127.0.0.1' : listen.hostname === '::' ? '[::1]' : listen.hostname.includes(':') ? `[${listen.hostname}]` : listen.hostname
  const url = `http://${host}:${listen.port}${PROBE_PATH}`
  return {
    async until(slug, want, withinMs) {
      const deadline = performance.now() + withinMs
      for (let answered = false; ;) {
        try {
          const res = await fetch(url, { headers: { host: `${slug}.${sitesDomain}:${listen.port}` }, redirect: 'manual', signal: AbortSignal.timeout(ASK_TIMEOUT_MS) })
          await res.body?.cancel()
          answered = true
          if (res.headers.has(EDGE_PAGE_HEADER) === (want === 'paged')) return true
        } catch {
          // Refused or timed out: berth serve is not running (or not yet), unless it answered before.
          if (!answered) return null
        }
        if (performance.now() >= deadline) return false
        await Bun.sleep(EVERY_MS)
      }
    },
  }
}
