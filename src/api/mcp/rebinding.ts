/** The names a local client may use for Berth in Host and Origin. */
const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]']

/** Where Berth listens on this machine: the plain listener's port and the HTTPS one's, if any. */
export interface LocalPorts {
  http: number
  https: number | null
}

/**
 * DNS-rebinding protection (MCP transports, Security Warning): a browser tricked into sending
 * requests to this server carries a foreign Host or Origin. The Host header must name the site
 * URL's host or a loopback name. The Origin, when sent, must be the site URL's origin or a
 * loopback name at one of Berth's own listeners, compared whole: scheme, host and port (RFC 6454
 * section 5), so that a page served by another program on this machine (another port) or over
 * plain HTTP for an HTTPS site URL cannot call. Returns why a request is refused, or null.
 *
 * @example
 *   const refused = rebindingGuard('https://hosting.example.net', () => ({ http: 8080, https: 443 }))
 *   refused(request) // "Origin 'http://hosting.example.net:9000' may not call this server."
 */
export function rebindingGuard(siteUrl: string, localPorts: () => LocalPorts): (request: Request) => string | null {
  const site = new URL(siteUrl)
  const hosts = new Set([site.hostname.toLowerCase(), ...LOOPBACK_NAMES])
  let origins: Set<string> | undefined
  // The listeners' ports are known once they listen (port 0 picks one), after this is made.
  const allowedOrigins = () => (origins ??= originsOf(site.origin, localPorts()))
  return (request) => {
    const host = hostnameOf(request.headers.get('host') ?? '')
    if (!hosts.has(host)) return `Host '${host}' is not this server's; use the address of site_url.`
    const header = request.headers.get('origin')
    if (header === null) return null
    if (header === 'null') return "Origin 'null' may not call this server."
    let origin: string
    try {
      origin = new URL(header).origin
    } catch {
      return 'The Origin header is not a URL.'
    }
    return allowedOrigins().has(origin) ? null : `Origin '${header}' may not call this server; only ${site.origin} may.`
  }
}

/** The site URL's origin and every loopback name at the listeners' ports, as URL.origin spells them. */
function originsOf(siteOrigin: string, ports: LocalPorts): Set<string> {
  const origins = new Set([siteOrigin])
  for (const name of LOOPBACK_NAMES) {
    origins.add(new URL(`http://${name}:${ports.http}`).origin)
    if (ports.https !== null) origins.add(new URL(`https://${name}:${ports.https}`).origin)
  }
  return origins
}

/** The host name of a Host header, lowercase, without its port ([::1] kept bracketed). */
function hostnameOf(header: string): string {
  const h = header.trim().toLowerCase()
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1)
  const colon = h.indexOf(':')
  return colon < 0 ? h : h.slice(0, colon)
}
