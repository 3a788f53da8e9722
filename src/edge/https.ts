import { LISTENER_WEBSOCKET, type ListenerServer } from '../dispatch'
import { readFileSync, writeFileSync } from 'node:fs'
import type { Logger } from '../lib/logger'

/**
 * Linux (5.14+) moves the connections queued on a closing SO_REUSEPORT listener to another in its
 * group instead of resetting them. Without it, a connection arriving in the instant an old
 * listener closes is reset (measured: 1 to 2 in 300 under repeated swaps; none with it).
 */
export const MIGRATE_SYSCTL = 'net.ipv4.tcp_migrate_req'
const MIGRATE_PROC = '/proc/sys/net/ipv4/tcp_migrate_req'

/**
 * The TLS 1.2 suites offered, Caddy's defaults: ECDHE key exchange with an AEAD cipher only
 * (AES-GCM, ChaCha20-Poly1305), so no CBC suite (LUCKY13) and no static RSA key exchange. TLS 1.3's
 * suites are all AEAD. Without this list Bun offers OpenSSL's defaults, two CBC-SHA1 suites among them.
 */
export const TLS_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
].join(':')

export interface HttpsCertificate {
  names: string[]
  cert: string
  key: string
}

/**
 * Berth's HTTPS listener: the same requests as the plain one (API, MCP, every site through the
 * edge), with the certificate picked by SNI among those Berth holds (Bun's TLS options, one entry
 * per name, wildcards included). HTTP/2 for clients that offer h2 by ALPN, HTTP/1.1 for the
 * others (a WebSocket upgrade is an HTTP/1.1 request, so browsers open the console's on an
 * HTTP/1.1 connection). A handshake without SNI, or naming a host Berth holds no certificate for,
 * fails (alert) instead of being answered with some other site's certificate: the listener's
 * default context, which answers those, has none. AEAD suites only (TLS_CIPHERS). A new set of
 * certificates takes effect from the next handshake: a listener with them opens on the same port
 * (SO_REUSEPORT) before the old one stops taking connections, and the old one finishes what it
 * has; no request fails meanwhile.
 */
export class HttpsListener {
  private server: ListenerServer | null = null
  private fingerprint = ''
  /** The listener `stop` is draining, which a forced stop cuts off. */
  private closing: ListenerServer | null = null
  private stopped = false

  constructor(private o: { hostname: string; port: number; fetch: (request: Request, server: ListenerServer) => Response | undefined | Promise<Response | undefined>; log: Logger; onServer?: (server: ListenerServer) => void }) {
    ensureConnectionMigration(o.log)
  }

  /** The port it listens on, or null while it holds no certificate (nothing to serve yet). */
  get port(): number | null {
    return this.server?.port ?? null
  }

  update(certificates: HttpsCertificate[]): void {
    const fingerprint = certificates.map((c) => `${c.names.join(',')}:${Bun.hash(c.cert)}`).sort().join('|')
    if (fingerprint === this.fingerprint || this.stopped) return
    const old = this.server
    if (certificates.length === 0) {
      this.server = null
      this.fingerprint = ''
      void old?.stop()
      return
    }
    const named = certificates.flatMap((c) => c.names.map((serverName) => ({ serverName, cert: c.cert, key: c.key, ciphers: TLS_CIPHERS })))
    // The first entry is the default context, the one a handshake keeps when its SNI names none
    // of the others (or is missing): without a certificate, such a handshake fails.
    const tls = [{ ciphers: TLS_CIPHERS }, ...named]
    try {
      const next = Bun.serve({
        hostname: this.o.hostname,
        // Port 0 (tests) is chosen once; a later set of certificates opens on that same port.
        port: old?.port ?? this.o.port,
        reusePort: true,
        http2: true,
        maxRequestBodySize: 1024 * 1024 * 1024,
        tls,
        fetch: this.o.fetch,
        // The console's WebSocket (src/dispatch.ts): the same as on the plain listener.
        websocket: LISTENER_WEBSOCKET,
      })
      this.o.onServer?.(next)
      this.server = next
      this.fingerprint = fingerprint
      void old?.stop()
      this.o.log.info('HTTPS serving', { listen: `${this.o.hostname}:${next.port}`, names: named.map((t) => t.serverName) })
    } catch (err) {
      // The old listener, if any, keeps serving what it had.
      this.o.log.error('the HTTPS listener could not take the new certificates', { error: (err as Error).message, port: this.o.port })
    }
  }

  /** Stops taking connections; the requests in flight finish (all cut at once with `force`). */
  async stop(force = false): Promise<void> {
    this.stopped = true
    const server = this.server ?? this.closing
    this.closing = server
    this.server = null
    await server?.stop(force)
  }
}

/** Turns on MIGRATE_SYSCTL when it can (as root), and says how otherwise; `berth install` sets it for good. */
export function ensureConnectionMigration(log: Logger): void {
  try {
    if (readFileSync(MIGRATE_PROC, 'utf8').trim() === '1') return
    writeFileSync(MIGRATE_PROC, '1')
  } catch {
    log.warn(`${MIGRATE_SYSCTL} is 0: a connection arriving while a renewed certificate is put in place, or while Berth restarts, may be reset; set it with: sysctl -w ${MIGRATE_SYSCTL}=1 (berth install writes /etc/sysctl.d/60-berth.conf)`)
  }
}
