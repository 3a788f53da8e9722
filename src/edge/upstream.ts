import type { Socket, SocketHandler } from 'bun'

/** Connecting to a container took longer than the upstream timeout. */
export class ConnectTimeout extends Error {}

/** What a connection reports to the exchange currently using it. */
export interface ConnectionUser {
  onData(chunk: Buffer): void
  onClose(error: Error | undefined): void
}

/**
 * One keep-alive HTTP/1.1 connection to a container, used by one exchange at a time. Writes
 * are never dropped: what the socket does not take at once waits for its `drain`.
 */
export class UpstreamConnection {
  socket: Socket<UpstreamConnection> | null = null
  user: ConnectionUser | null = null
  closed = false
  /** Exchanges completed on this connection; above 0 it may have been closed by the peer while idle. */
  served = 0
  idleSince = 0
  private pending: Uint8Array[] = []
  private drained: (() => void)[] = []

  constructor(readonly key: string, private pool: UpstreamPool) {}

  /** True when everything written so far has reached the kernel. */
  get flushed(): boolean {
    return this.pending.length === 0
  }

  /** Writes bytes, or a string that is pure ASCII (a request head; Bun writes strings as UTF-8). */
  write(data: Uint8Array | string): void {
    if (this.closed) return
    if (this.pending.length > 0) {
      this.pending.push(typeof data === 'string' ? Buffer.from(data, 'latin1') : data)
      return
    }
    const n = this.socket!.write(data)
    if (n < data.length) {
      const bytes = typeof data === 'string' ? Buffer.from(data, 'latin1') : data
      this.pending.push(n > 0 ? bytes.subarray(n) : bytes)
    }
  }

  /** Resolves once every pending byte is written (or the connection closed). */
  whenFlushed(): Promise<void> {
    if (this.pending.length === 0 || this.closed) return Promise.resolve()
    return new Promise((resolve) => this.drained.push(resolve))
  }

  /** @internal socket handler */
  onDrain(): void {
    while (this.pending.length > 0 && !this.closed) {
      const data = this.pending[0]!
      const n = this.socket!.write(data)
      if (n < data.length) {
        this.pending[0] = n > 0 ? data.subarray(n) : data
        return
      }
      this.pending.shift()
    }
    this.wake()
  }

  /** @internal socket handler */
  onClose(error: Error | undefined): void {
    if (this.closed) return
    this.closed = true
    this.pending.length = 0
    this.wake()
    this.pool.forget(this)
    const user = this.user
    this.user = null
    user?.onClose(error)
  }

  pause(): void {
    this.socket?.pause()
  }

  resume(): void {
    this.socket?.resume()
  }

  /** Closes an idle connection politely, with a FIN. */
  close(): void {
    if (this.closed) return
    this.user = null
    this.socket?.end()
    this.onClose(undefined)
  }

  /**
   * Closes at once with a reset: for a connection in an unknown state (errors, aborted
   * exchanges), and for one the container will not keep alive. The reset leaves no TIME_WAIT
   * on the host: with a container that closes after every response (busybox httpd), closing with
   * a FIN left about 60 s x the request rate sockets in TIME_WAIT, and past ~28,000 (the
   * ephemeral port range, per container address) every new connection to it slowed down, then
   * failed (measured with bench/edge.ts).
   */
  destroy(): void {
    if (this.closed) return
    this.user = null
    this.socket?.terminate()
    this.onClose(undefined)
  }

  private wake(): void {
    const waiters = this.drained
    if (waiters.length === 0) return
    this.drained = []
    for (const resolve of waiters) resolve()
  }
}

const handlers: SocketHandler<UpstreamConnection> = {
  data(socket, chunk) {
    const conn = socket.data
    // Bytes on an idle connection answer no request: the connection can no longer be trusted.
    if (conn.user) conn.user.onData(chunk)
    else conn.destroy()
  },
  drain(socket) {
    socket.data.onDrain()
  },
  close(socket, error) {
    socket.data.onClose(error)
  },
  error(socket, error) {
    socket.data.onClose(error)
  },
  connectError() {
    // The promise of Bun.connect rejects with the error; handled by the caller.
  },
}

/**
 * Keep-alive connections to the containers, like nginx's `upstream { keepalive N; }`: at most
 * `maxIdle` idle connections per container, reused most recent first (the least likely to have
 * been closed by the container), closed after `idleTimeoutMs` without use.
 */
export class UpstreamPool {
  private idle = new Map<string, UpstreamConnection[]>()
  /** Upstreams nothing is sent to any more (an app's old web process): their connections are closed once free. */
  private retired = new Set<string>()
  opened = 0

  constructor(private maxIdle: number, private idleTimeoutMs: number, private connectTimeoutMs: number) {}

  /** An idle connection to `key`, or null. */
  take(key: string): UpstreamConnection | null {
    const list = this.idle.get(key)
    if (!list) return null
    for (let conn = list.pop(); conn; conn = list.pop()) {
      if (!conn.closed) return conn
    }
    return null
  }

  /**
   * Opens a new connection; rejects when the container cannot be reached, with ConnectTimeout
   * when it does not answer in time (a stopped container's address can swallow the SYN).
   */
  connect(key: string, hostname: string, port: number): Promise<UpstreamConnection> {
    if (this.retired.size > 0) this.retired.delete(key)
    const conn = new UpstreamConnection(key, this)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        conn.closed = true
        reject(new ConnectTimeout(`no connection to ${hostname}:${port} within ${this.connectTimeoutMs} ms`))
      }, this.connectTimeoutMs)
      Bun.connect<UpstreamConnection>({ hostname, port, data: conn, socket: handlers }).then(
        (socket) => {
          clearTimeout(timer)
          conn.socket = socket
          // Given up on already: the late connection is not used.
          if (conn.closed) return socket.terminate()
          socket.setNoDelay(true)
          this.opened++
          resolve(conn)
        },
        (err: Error) => {
          clearTimeout(timer)
          reject(err)
        },
      )
    })
  }

  /** Takes back a connection whose exchange ended cleanly. */
  release(conn: UpstreamConnection, now: number): void {
    conn.user = null
    if (conn.closed) return
    if (this.retired.size > 0 && this.retired.has(conn.key)) {
      conn.close()
      return
    }
    let list = this.idle.get(conn.key)
    if (!list) this.idle.set(conn.key, (list = []))
    if (list.length >= this.maxIdle) {
      conn.close()
      return
    }
    conn.idleSince = now
    list.push(conn)
  }

  /** @internal called when a connection closes */
  forget(conn: UpstreamConnection): void {
    const list = this.idle.get(conn.key)
    if (!list) return
    const i = list.indexOf(conn)
    if (i !== -1) list.splice(i, 1)
    if (list.length === 0) this.idle.delete(conn.key)
  }

  /** Closes connections idle for longer than the idle timeout. */
  sweep(now: number): void {
    for (const list of [...this.idle.values()]) {
      for (const conn of list.filter((c) => now - c.idleSince > this.idleTimeoutMs)) conn.close()
    }
  }

  /**
   * No request goes to `key` any more (an app site's web moved to another port): its idle
   * connections are closed now and its busy ones when their exchange ends, so the old process
   * sees its connections go as soon as its requests are done (its supervisor then stops it).
   */
  retire(key: string): void {
    if (this.retired.size > 1000) this.retired.clear()
    this.retired.add(key)
    for (const conn of [...(this.idle.get(key) ?? [])]) conn.close()
  }

  idleCount(): number {
    let n = 0
    for (const list of this.idle.values()) n += list.length
    return n
  }

  close(): void {
    for (const list of [...this.idle.values()]) for (const conn of [...list]) conn.close()
    this.idle.clear()
  }
}
