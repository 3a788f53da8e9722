/**
 * Stand-ins for site containers in the edge's tests: real listeners on loopback ports, so the
 * proxy is exercised over real sockets.
 */
import type { Socket } from 'bun'
import { createServer } from 'node:net'

export interface RawUpstream {
  port: number
  /** Connections accepted so far. */
  connections: number
  /** Request heads received, in order. */
  heads: string[]
  stop(): void
}

/**
 * A TCP server that answers each request head it reads with whatever `answer` writes, byte for
 * byte, so tests control exactly what the edge receives. Requests must have no body.
 * `nth` counts requests on the same connection from 0.
 */
export function startRawUpstream(answer: (socket: Socket<{ buffer: string; nth: number }>, head: string, nth: number) => void): RawUpstream {
  const state: RawUpstream = { port: 0, connections: 0, heads: [], stop: () => listener.stop(true) }
  const listener = Bun.listen<{ buffer: string; nth: number }>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(socket) {
        socket.data = { buffer: '', nth: 0 }
        state.connections++
      },
      data(socket, chunk) {
        socket.data.buffer += chunk.toString('latin1')
        for (let end = socket.data.buffer.indexOf('\r\n\r\n'); end !== -1; end = socket.data.buffer.indexOf('\r\n\r\n')) {
          const head = socket.data.buffer.slice(0, end)
          socket.data.buffer = socket.data.buffer.slice(end + 4)
          state.heads.push(head)
          answer(socket, head, socket.data.nth++)
        }
      },
    },
  })
  state.port = listener.port
  return state
}

/** A loopback port with nothing listening on it. */
export function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

/** `length` bytes that differ from any shifted copy of themselves, so a lost or repeated piece shows in a checksum. */
export function patternBytes(length: number, seed = 1): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(length)
  let x = seed >>> 0 || 1
  for (let i = 0; i < length; i++) {
    x ^= x << 13
    x ^= x >>> 17
    x ^= x << 5
    out[i] = x & 255
  }
  return out
}

export function sha256(data: Uint8Array | ArrayBuffer): string {
  return new Bun.CryptoHasher('sha256').update(data).digest('hex')
}
