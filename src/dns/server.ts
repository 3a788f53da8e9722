import { createSocket, type Socket } from 'node:dgram'
import type { Logger } from '../lib/logger'
import { respond, truncatedAnswer } from './answer'
import type { DnsQueryCounts } from './query-counts'
import { type RateLimitSettings, ResponseRateLimiter } from './rate-limit'
import type { Authority } from './types'

export interface DnsServerOptions {
  authority: Authority
  hostname: string
  /** 0 picks a free port (tests); UDP and TCP then share the one the system gave UDP. */
  port: number
  log: Logger
  /** Response-rate limiting of UDP answers; none when absent or at 0 responses per second. */
  rateLimit?: RateLimitSettings
  /** Counts the answers sent by response code (for /metrics); none when absent. */
  counts?: DnsQueryCounts
  /**
   * A bound UDP socket to serve on instead of binding one: the one systemd holds across restarts
   * (berth.socket), whose receive buffer keeps the queries that come while no Berth runs.
   */
  udpFd?: number
  /** The TCP listener joins others on its address (SO_REUSEPORT): systemd's socket, handed over (drivers/systemd/sockets.ts). */
  reusePort?: boolean
}

export interface RunningDnsServer {
  port: number
  stop(): Promise<void>
}

/** A TCP client that sends nothing for this long is closed (RFC 7766 6.2.3 suggests seconds). */
const TCP_IDLE_SECONDS = 10
/** Bytes a TCP client may have unanswered in flight before it is cut off (a slow reader). */
const TCP_MAX_PENDING = 1 << 20
const PORT_ATTEMPTS = 5
/**
 * The UDP receive buffer asked for. At the kernel's usual 208 KiB, a burst of queries from many
 * clients at once lost about 60 of them per run (dnsperf, bench/dns.ts); 4 MiB lost none. The
 * kernel caps it at net.core.rmem_max (operations.md says how to raise that).
 */
const UDP_RECEIVE_BUFFER = 4 << 20
/** How often the log sums up the answers response-rate limiting held back, when there were any. */
const RATE_LIMIT_LOG_MS = 60_000

interface Connection {
  /** Bytes received and not yet a whole message. */
  input: Buffer
  /** Bytes answered and not yet taken by the kernel. */
  output: Buffer
  /** Messages answered on it. */
  answered: number
}

/**
 * At stop, open TCP connections get this long to send the query they were opened for and take
 * its answer (a connection accepted just before the stop has not sent it yet); then any left are
 * closed.
 */
const TCP_DRAIN_MS = 2_000

/**
 * Berth's authoritative DNS server: UDP and TCP on one port (RFC 7766 makes TCP mandatory).
 * Answers come from `respond`, which reads the zones the domain layer keeps current; the server
 * holds no state but its sockets and the response-rate limiter's buckets. A message that cannot be
 * answered is dropped or answered with an error code; nothing a client sends stops the server.
 *
 * UDP answers pass the response-rate limiter (src/dns/rate-limit.ts) before any work is done for
 * them; TCP answers do not (a TCP client has proven its address with the handshake).
 */
export async function startDnsServer(o: DnsServerOptions): Promise<RunningDnsServer> {
  let lastError: unknown
  // With port 0, UDP picks the port and TCP must get the same one; retry if TCP finds it taken.
  for (let attempt = 0; attempt < (o.port === 0 ? PORT_ATTEMPTS : 1); attempt++) {
    const udp = createSocket({ type: o.hostname.includes(':') ? 'udp6' : 'udp4' })
    const limiter = o.rateLimit && o.rateLimit.responsesPerSecond > 0 ? new ResponseRateLimiter(o.rateLimit) : null
    udp.on('message', (message, from) => {
      const verdict = limiter ? limiter.check(from.address) : 'send'
      if (verdict === 'drop') return
      const answer = answerSafely(o, message, 'udp')
      if (answer) udp.send(verdict === 'send' ? answer : truncatedAnswer(answer, message), from.port, from.address)
    })
    // An answer to a client that has gone can come back as an ICMP error; it concerns that
    // client only, and the socket goes on serving.
    udp.on('error', () => {})
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject)
      const bound = () => {
        udp.off('error', reject)
        resolve()
      }
      if (o.udpFd !== undefined) udp.bind({ fd: o.udpFd } as { port?: number }, bound)
      else udp.bind(o.port, o.hostname, bound)
    })
    raiseReceiveBuffer(udp, o.log)
    const port = udp.address().port
    try {
      const tcp = listenTcp(o, port)
      o.log.info('DNS server listening', { listen: `${o.hostname}:${port}`, transports: 'udp,tcp', rate_limit: limiter ? `${o.rateLimit!.responsesPerSecond}/s per prefix, slip ${o.rateLimit!.slip}` : 'off' })
      const summary = limiter ? setInterval(() => logLimited(limiter, o.log), RATE_LIMIT_LOG_MS) : null
      summary?.unref()
      return {
        port,
        async stop() {
          if (summary) clearInterval(summary)
          await new Promise<void>((r) => udp.close(() => r()))
          await tcp.stop()
        },
      }
    } catch (err) {
      udp.close()
      lastError = err
    }
  }
  throw lastError
}

/**
 * The TCP side. `stop` takes no new connection and lets each open one finish the query it came
 * for: one that has had an answer and has nothing pending is closed at once, one that has not is
 * closed after its answer; whatever is left after TCP_DRAIN_MS is cut off.
 */
function listenTcp(o: DnsServerOptions, port: number): { stop(): Promise<void> } {
  const connections = new Map<Bun.Socket<undefined>, Connection>()
  let stopping = false
  /** While stopping: closes `socket` once it has answered and has nothing left to answer or send. */
  const closeIfDone = (socket: Bun.Socket<undefined>, c: Connection) => {
    if (stopping && c.answered > 0 && c.input.length === 0 && c.output.length === 0) socket.end()
  }
  const flush = (socket: Bun.Socket<undefined>, c: Connection) => {
    if (c.output.length === 0) return
    const written = socket.write(c.output)
    c.output = written >= c.output.length ? Buffer.alloc(0) : c.output.subarray(Math.max(written, 0))
  }
  // reusePort is honoured by Bun.listen but missing from its type (bun-types 1.4).
  const listener = Bun.listen({
    hostname: o.hostname,
    port,
    ...({ reusePort: o.reusePort === true } as object),
    socket: {
      open(socket) {
        connections.set(socket, { input: Buffer.alloc(0), output: Buffer.alloc(0), answered: 0 })
        socket.timeout(TCP_IDLE_SECONDS)
      },
      data(socket, chunk) {
        const c = connections.get(socket)
        if (!c) return
        c.input = c.input.length ? Buffer.concat([c.input, chunk]) : Buffer.from(chunk)
        // Messages are length-prefixed (RFC 1035 4.2.2) and may be pipelined; answer each whole one.
        while (c.input.length >= 2) {
          const length = c.input.readUInt16BE(0)
          if (c.input.length < 2 + length) break
          const message = c.input.subarray(2, 2 + length)
          c.input = c.input.subarray(2 + length)
          const answer = answerSafely(o, message, 'tcp')
          if (!answer) continue
          const prefix = Buffer.alloc(2)
          prefix.writeUInt16BE(answer.length)
          c.output = Buffer.concat([c.output, prefix, answer])
          c.answered++
        }
        if (c.output.length > TCP_MAX_PENDING) {
          socket.end()
          return
        }
        socket.timeout(TCP_IDLE_SECONDS)
        flush(socket, c)
        closeIfDone(socket, c)
      },
      drain(socket) {
        const c = connections.get(socket)
        if (!c) return
        flush(socket, c)
        closeIfDone(socket, c)
      },
      timeout(socket) {
        socket.end()
      },
      error() {},
      close(socket) {
        connections.delete(socket)
      },
    },
  })
  return {
    async stop() {
      stopping = true
      listener.stop(false)
      for (const [socket, c] of connections) closeIfDone(socket, c)
      for (const deadline = Date.now() + TCP_DRAIN_MS; connections.size > 0 && Date.now() < deadline; ) await Bun.sleep(10)
      listener.stop(true)
    },
  }
}

/** One line a minute while answers are being limited: how many, to how many client prefixes. */
function logLimited(limiter: ResponseRateLimiter, log: Logger): void {
  const stats = limiter.takeStats()
  if (stats.slipped + stats.dropped === 0) return
  log.warn('DNS answers rate-limited (a flood, or a spoofed source being reflected at)', { dropped: stats.dropped, truncated: stats.slipped, prefixes: stats.prefixes, tracked_prefixes: limiter.size })
}

function raiseReceiveBuffer(socket: Socket, log: Logger): void {
  try {
    socket.setRecvBufferSize(UDP_RECEIVE_BUFFER)
  } catch (err) {
    log.warn('the DNS server keeps the default UDP receive buffer', { error: (err as Error).message })
  }
}

/** `respond`, with any failure of ours logged and answered by silence rather than a crash. */
function answerSafely(o: DnsServerOptions, message: Uint8Array, transport: 'udp' | 'tcp'): Buffer | null {
  try {
    const answer = respond(Buffer.isBuffer(message) ? message : Buffer.from(message), o.authority, transport)
    if (answer) o.counts?.answered(answer)
    return answer
  } catch (err) {
    o.log.error('DNS answer failed', { error: (err as Error).message, transport })
    return null
  }
}
