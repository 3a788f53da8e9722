import { createSocket } from 'node:dgram'
import * as packet from 'dns-packet'

/**
 * Clients that send requests one after another, as fast as they are answered, while Berth
 * restarts (test/systemd-unit.solo.e2e.test.ts, bench/restarts.ts): each counts what it sent, what
 * failed (a refused or reset connection, a wrong status, no answer in time) and the longest a
 * request took, which is the longest pause a client saw.
 */
export interface LoopResult {
  name: string
  sent: number
  failed: number
  longestMs: number
  /** The first few failures, with when they happened (ms since the loop began). */
  failures: string[]
}

export interface RequestLoop {
  /** Stops after the request in flight; the tally. */
  stop(): Promise<LoopResult>
}

/** A request that takes longer than this counts as failed (a client's usual patience). */
const PATIENCE_MS = 10_000
/** A query unanswered this long counts as lost (dig's and most stub resolvers' timeout). */
const DNS_PATIENCE_MS = 5_000
/** How long a loop waits after a failure before the next request. */
const FAILED_RETRY_MS = 10

/** Loops `send` until stopped; `send` resolves to null when answered right, else what went wrong. */
function loop(name: string, send: () => Promise<string | null>, pauseMs = 0): RequestLoop {
  const result: LoopResult = { name, sent: 0, failed: 0, longestMs: 0, failures: [] }
  const began = performance.now()
  let running = true
  const done = (async () => {
    while (running) {
      const at = performance.now()
      const problem = await send().catch((err: Error) => `${err.name}: ${err.message}`)
      const took = performance.now() - at
      result.sent++
      result.longestMs = Math.max(result.longestMs, Math.round(took))
      if (problem !== null) {
        result.failed++
        if (result.failures.length < 10) result.failures.push(`${Math.round(at - began)} ms: ${problem}`)
      }
      // A failed request is sent again after a moment, as a client would: the count of failures
      // then measures how long the service was away.
      if (pauseMs > 0 || problem !== null) await Bun.sleep(Math.max(pauseMs, problem === null ? 0 : FAILED_RETRY_MS))
    }
  })()
  return {
    async stop() {
      running = false
      await done
      return result
    },
  }
}

/** GETs `url` (fetch's kept-alive connections, as a browser's) until stopped; 200 with `expect` in the body is right. */
export function httpLoop(name: string, url: string, expect: string, init: RequestInit & { tls?: { ca?: string; serverName?: string } } = {}): RequestLoop {
  return loop(name, async () => {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(PATIENCE_MS) } as RequestInit)
    const body = await res.text()
    if (res.status !== 200) return `status ${res.status}`
    return body.includes(expect) ? null : `unexpected body ${JSON.stringify(body.slice(0, 80))}`
  })
}

/**
 * Asks Berth's DNS over UDP for `name`'s SOA until stopped, as a resolver would: one query at a
 * time, answered with NOERROR, else failed (no retry: a lost query counts). Paced at about 50
 * a second, under the response-rate limit's 200 (dns.rate_limit), which would drop some.
 */
export function dnsLoop(name: string, server: { host: string; port: number }, question: string): RequestLoop {
  const socket = createSocket('udp4')
  let id = 0
  let waiting: ((reply: Buffer) => void) | null = null
  socket.on('message', (reply) => waiting?.(reply))
  // An ICMP port unreachable (nothing bound) surfaces here and on the next send.
  socket.on('error', () => {})
  const inner = loop(name, () => {
    const query = packet.encode({ id: ++id % 65536, type: 'query', flags: packet.RECURSION_DESIRED, questions: [{ name: question, type: 'SOA', class: 'IN' }] })
    return new Promise<string | null>((resolve) => {
      const timer = setTimeout(() => {
        waiting = null
        resolve(`no answer within ${DNS_PATIENCE_MS} ms`)
      }, DNS_PATIENCE_MS)
      waiting = (reply) => {
        const answer = packet.decode(reply) as packet.DecodedPacket & { rcode?: string }
        if (answer.id !== id % 65536) return
        clearTimeout(timer)
        waiting = null
        resolve(answer.rcode === 'NOERROR' && (answer.answers?.length ?? 0) > 0 ? null : `rcode ${answer.rcode}, ${answer.answers?.length ?? 0} answers`)
      }
      socket.send(query, server.port, server.host)
    })
  }, 20)
  return {
    async stop() {
      const result = await inner.stop()
      socket.close()
      return result
    },
  }
}

/**
 * Asks Berth's DNS over TCP for `question`'s SOA until stopped, a new connection for each query
 * (RFC 7766's two-byte length before each message), paced as `dnsLoop`.
 */
export function dnsTcpLoop(name: string, server: { host: string; port: number }, question: string): RequestLoop {
  let id = 0
  return loop(name, () => {
    const query = packet.streamEncode({ id: ++id % 65536, type: 'query', flags: packet.RECURSION_DESIRED, questions: [{ name: question, type: 'SOA', class: 'IN' }] })
    return new Promise<string | null>((resolve, reject) => {
      let received = Buffer.alloc(0)
      let settled = false
      const finish = (problem: string | null, socket?: { end(): void }) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        socket?.end()
        resolve(problem)
      }
      const timer = setTimeout(() => finish(`no answer within ${DNS_PATIENCE_MS} ms`), DNS_PATIENCE_MS)
      Bun.connect({
        hostname: server.host,
        port: server.port,
        socket: {
          open: (socket) => void socket.write(query),
          data: (socket, chunk) => {
            received = Buffer.concat([received, chunk])
            if (received.length < 2 || received.length < 2 + received.readUInt16BE(0)) return
            const answer = packet.streamDecode(received) as packet.DecodedPacket & { rcode?: string }
            finish(answer.rcode === 'NOERROR' && (answer.answers?.length ?? 0) > 0 ? null : `rcode ${answer.rcode}, ${answer.answers?.length ?? 0} answers`, socket)
          },
          close: () => finish('connection closed before the answer'),
          error: (_socket, err) => finish(`${err.name}: ${err.message}`),
          connectError: (_socket, err) => finish(`${err.name}: ${err.message}`),
        },
      }).catch(reject)
    })
  }, 20)
}

/** One line per loop, for the test's and the benchmark's output. */
export function describeLoops(results: LoopResult[]): string {
  return results.map((r) => `${r.name}: ${r.sent} sent, ${r.failed} failed, longest ${r.longestMs} ms${r.failures.length ? `\n  ${r.failures.join('\n  ')}` : ''}`).join('\n')
}
