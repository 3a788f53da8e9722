import type { Server } from 'bun'
import { afterAll, beforeAll } from 'vitest'
import { EdgeMetrics } from '../../src/edge/metrics'
import { createEdgeProxy, parseSiteHost } from '../../src/edge/proxy'
import type { EdgeAccessRecord, EdgeProxy, EdgeRequestRecord, SiteTarget } from '../../src/edge/types'
import { memoryLogger } from '../../src/lib/logger'
import { closedPort, patternBytes, sha256, startRawUpstream, type RawUpstream } from './upstreams'

/**
 * The edge proxy under test (src/edge/proxy*.test.ts): a real listener on a loopback port in
 * front of real "containers" (Bun.serve and raw-socket upstreams), with a site of each state,
 * and the request records, access-log lines, metrics and log lines the edge produced.
 */

export const BIG = patternBytes(5 * 1024 * 1024, 7)
export const TIMEOUT_MS = 1500

/** The "container": a real Bun.serve on a loopback port, remembering the connections it saw. */
function startUpstream() {
  const peers = new Set<string>()
  let release: () => void = () => {}
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch(req, srv) {
      const peer = srv.requestIP(req)
      if (peer) peers.add(`${peer.address}:${peer.port}`)
      const url = new URL(req.url)
      switch (url.pathname) {
        case '/echo': {
          const body = req.body === null ? null : new Uint8Array(await req.arrayBuffer())
          return Response.json({
            method: req.method,
            target: req.url.slice(req.url.indexOf('/', 8)),
            headers: req.headers.toJSON(),
            bodyLength: body?.length ?? null,
            bodySha256: body ? sha256(body) : null,
          })
        }
        case '/big':
          return new Response(BIG, { headers: { 'content-type': 'application/octet-stream' } })
        case '/big-chunked':
          return new Response(chunksOf(BIG, 100_000))
        case '/chunked':
          return new Response(chunksOf(new TextEncoder().encode('one,two,three,four'), 4))
        case '/slow': {
          const gate = new Promise<void>((resolve) => (release = resolve))
          return new Response(
            new ReadableStream({
              start(controller) {
                controller.enqueue(new TextEncoder().encode('first;'))
                void gate.then(() => {
                  controller.enqueue(new TextEncoder().encode('last'))
                  controller.close()
                })
              },
            }),
          )
        }
        case '/endless':
          return new Response(new ReadableStream({ pull: (c) => c.enqueue(BIG.subarray(0, 64 * 1024)) }))
        case '/gzip':
          return new Response(Bun.gzipSync(new TextEncoder().encode('compressed '.repeat(100))), { headers: { 'content-encoding': 'gzip', 'content-type': 'text/plain' } })
        case '/sleep':
          await Bun.sleep(Number(url.searchParams.get('ms')))
          return new Response('late')
        case '/size':
          return new Response(BIG.subarray(0, Number(url.searchParams.get('n'))), { status: Number(url.searchParams.get('status') ?? 200) })
      }
      return new Response('no such path', { status: 404 })
    },
  })
  return { server, peers, release: () => release() }
}

export function chunksOf(bytes: Uint8Array, size: number): ReadableStream<Uint8Array> {
  let offset = 0
  return new ReadableStream({
    pull(controller) {
      if (offset >= bytes.length) return controller.close()
      controller.enqueue(bytes.slice(offset, offset + size))
      offset += size
    },
  })
}

const site = (slug: string, state: SiteTarget['state'], port?: number): SiteTarget => ({
  siteId: `site_${slug}`,
  slug,
  state,
  upstream: port === undefined ? undefined : { address: '127.0.0.1', port },
})

/**
 * Starts the upstreams and the edge before the file's tests and stops them after; the servers
 * are read through getters, set once beforeAll has run.
 */
export function useEdgeProxy() {
  let upstream: ReturnType<typeof startUpstream>
  let keepAliveUpstream: ReturnType<typeof startUpstream>
  let raw: RawUpstream
  let staleUpstream: RawUpstream
  let edge: EdgeProxy
  let listener: Server<undefined>
  const records: { siteId: string; record: EdgeRequestRecord }[] = []
  const accessLines: { slug: string; request: EdgeAccessRecord }[] = []
  const metrics = new EdgeMetrics()
  const log = memoryLogger()
  const sites = new Map<string, SiteTarget>()

  beforeAll(async () => {
    upstream = startUpstream()
    keepAliveUpstream = startUpstream()
    raw = startRawUpstream((socket, head) => {
      const path = head.split(' ')[1]
      if (path === '/hop') {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: keep-alive, X-Secret\r\nX-Secret: hop\r\nKeep-Alive: timeout=5\r\nProxy-Connection: keep-alive\r\nTrailer: X-Checksum\r\nUpgrade: h2c\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nVia: 1.0 inner\r\nContent-Length: 2\r\n\r\nok')
      } else if (path === '/interim') {
        socket.write('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\ndone')
      } else if (path === '/garbage') {
        socket.write('SPDY/9 what\r\n\r\n')
      } else if (path === '/close-delimited') {
        socket.write('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end')
        socket.end()
      } else if (path === '/conn-close') {
        socket.write('HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 3\r\n\r\nbye')
      } else if (path?.startsWith('/cut?n=')) {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${path.slice(7)}\r\n\r\npartial`)
        socket.end()
      } else if (path === '/head') {
        socket.write('HTTP/1.1 200 OK\r\nContent-Length: 12345\r\nContent-Type: text/html\r\n\r\n')
      }
    })
    // Answers the first request on each connection and then, like a server whose keep-alive
    // timer just fired, closes the connection when the next request arrives.
    staleUpstream = startRawUpstream((socket, _head, nth) => {
      if (nth === 0) socket.write('HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh')
      else socket.end()
    })
    const down = await closedPort()
    for (const s of [
      site('app', 'serving', upstream.server.port),
      site('keepalive', 'serving', keepAliveUpstream.server.port),
      site('metered', 'serving', upstream.server.port),
      { ...site('logged', 'serving', upstream.server.port), accessLog: true as const },
      site('raw', 'serving', raw.port),
      site('stale', 'serving', staleUpstream.port),
      site('down', 'serving', down),
      site('setup', 'provisioning'),
      site('paused', 'stopped'),
      site('broken', 'failed'),
      site('doomed', 'pending_deletion'),
      site('nocontainer', 'serving'),
      site('coming-back', 'recovering'),
      { ...site('strict', 'serving', upstream.server.port), hsts: 'max-age=600' },
      { ...site('strict-paused', 'stopped'), hsts: 'max-age=600' },
    ]) {
      sites.set(s.slug, s)
    }
    edge = createEdgeProxy({
      resolve: async (host) => {
        const slug = parseSiteHost(host, 'localhost')
        return slug === null ? null : (sites.get(slug) ?? null)
      },
      metrics: {
        begin: (siteId, bytesIn) => metrics.begin(siteId, bytesIn),
        record(siteId, record) {
          records.push({ siteId, record })
          metrics.record(siteId, record)
        },
      },
      accessLog: { write: (target, request) => void accessLines.push({ slug: target.slug, request }) },
      log,
      siteUrl: 'http://localhost:8080',
      upstreamTimeoutMs: TIMEOUT_MS,
    })
    listener = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      maxRequestBodySize: 64 * 1024 * 1024,
      fetch: (req, srv) => edge.handle(req, srv.requestIP(req)!.address),
    })
  })

  afterAll(() => {
    listener?.stop(true)
    edge?.close()
    upstream?.server.stop(true)
    keepAliveUpstream?.server.stop(true)
    raw?.stop()
    staleUpstream?.stop()
  })

  /** A request to the edge for `slug.localhost`. */
  function visit(slug: string, path: string, init: RequestInit & { decompress?: boolean } = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (!headers.has('host')) headers.set('host', `${slug}.localhost:8080`)
    return fetch(`http://127.0.0.1:${listener.port}${path}`, { ...init, headers } as RequestInit)
  }

  /** Waits until `check` holds, at most `ms`. */
  async function until(check: () => boolean, ms = 3000): Promise<void> {
    const end = Date.now() + ms
    while (!check()) {
      if (Date.now() > end) throw new Error('condition not met in time')
      await Bun.sleep(10)
    }
  }

  /** The request records of `slug`'s site. */
  const recordsOf = (slug: string) => records.filter((r) => r.siteId === `site_${slug}`).map((r) => r.record)

  return {
    get upstream() { return upstream },
    get keepAliveUpstream() { return keepAliveUpstream },
    get raw() { return raw },
    get staleUpstream() { return staleUpstream },
    get edge() { return edge },
    records, accessLines, metrics, log, visit, until, recordsOf,
  }
}
