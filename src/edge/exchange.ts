import { ChunkedDecoder, MAX_HEAD_BYTES, ProtocolError, type BodyFraming } from './http1'
import { ResponseHeads } from './response-heads'
import type { ConnectionUser, UpstreamConnection, UpstreamPool } from './upstream'

/** Why no response came from the container. */
export type UpstreamFailure =
  /** Connection refused, reset or closed before a complete response. */
  | 'unreachable'
  /** A reused keep-alive connection closed before any byte of the answer: safe to retry on a new one. */
  | 'stale'
  /** No complete response within the timeout. */
  | 'timeout'
  /** The container's answer was not valid HTTP/1.1. */
  | 'protocol'
  /** The client stopped sending its request body. */
  | 'client_aborted'
  /** A fault in the edge itself. */
  | 'internal'

export class UpstreamError extends Error {
  constructor(readonly kind: UpstreamFailure, message: string) {
    super(message)
  }
}

/**
 * Length-delimited bodies up to this size are gathered before the response starts (nginx's
 * proxy_buffering does the same), so a typical page, script or image leaves in one write and
 * keeps its Content-Length; larger or open-ended bodies stream. Bun's listener frames every
 * streamed body as chunked, whatever Content-Length the handler sets (oven-sh/bun#10507), so
 * this limit is also the size up to which clients see a length (download progress).
 */
export const BUFFER_LIMIT = 512 * 1024

/**
 * On a Response the edge answered with a whole body: that body's bytes, so that the AI modules
 * can rewrite a page without reading it back through a stream.
 */
export const WHOLE_BODY: unique symbol = Symbol('berth.edge.wholeBody')
export type WithWholeBody = Response & { [WHOLE_BODY]?: Uint8Array }

/** Bytes queued towards a slow client before the container's socket is paused. */
const STREAM_HIGH_WATER = 256 * 1024

const HEAD_END = Buffer.from('\r\n\r\n')
/** Heads of every container's responses, read once per distinct text (pure: the text decides everything). */
const heads = new ResponseHeads()
const CRLF = Buffer.from('\r\n')
const LAST_CHUNK = Buffer.from('0\r\n\r\n')

export interface ExchangeHooks {
  /** Called once when a response from the container is complete, or cut short by either side. */
  done(status: number, bytesOut: number): void
  /** Called once when the response has started or failed: the deadline no longer applies. */
  settled(exchange: Exchange): void
  /** The answer to give when the container gave none (an error page, or a retry). */
  failed(error: UpstreamError): Response | Promise<Response>
}

/**
 * One request and its response over one upstream connection. The response promise resolves as
 * soon as a client can start receiving (head plus a small body, or head and a stream), or with
 * `hooks.failed`'s answer when there will be no response from the container; it never rejects.
 * The connection goes back to the pool only when both messages ended cleanly.
 */
export class Exchange implements ConnectionUser {
  readonly response: Promise<Response>
  /** performance.now() after which the exchange times out if its response has not started. */
  readonly deadline: number
  private resolve!: (response: Response | Promise<Response>) => void
  private phase: 'head' | 'buffering' | 'streaming' | 'done' = 'head'
  private headBytes: Buffer | null = null
  private received = false
  private requestSent = false
  private keepAlive = false
  private status = 0
  private headers: Headers | null = null
  private framing: BodyFraming = 'none'
  private remaining = 0
  private decoder: ChunkedDecoder | null = null
  private pieces: Buffer[] = []
  private controller: ReadableStreamDefaultController<Uint8Array> | null = null
  private paused = false
  private bytesOut = 0

  constructor(
    private conn: UpstreamConnection,
    private pool: UpstreamPool,
    private method: string,
    timeoutMs: number,
    private hooks: ExchangeHooks,
  ) {
    this.deadline = performance.now() + timeoutMs
    this.response = new Promise<Response>((resolve) => {
      this.resolve = resolve
    })
  }

  /**
   * Writes the request head (bytes, or an ASCII string), then streams `body` framed as `chunked`
   * or as-is (Content-Length).
   */
  send(head: Uint8Array | string, body: ReadableStream<Uint8Array> | null, chunked: boolean): Promise<Response> {
    this.conn.user = this
    this.conn.write(head)
    if (body === null) this.requestSent = true
    else void this.pump(body, chunked)
    return this.response
  }

  /** Called by the edge's timer once the deadline has passed. */
  timeout(): void {
    if (this.phase !== 'head' && this.phase !== 'buffering') return
    this.abandon(new UpstreamError('timeout', 'no response from the container in time'))
  }

  onData(chunk: Buffer): void {
    this.received = true
    try {
      switch (this.phase) {
        case 'head': return this.readHead(chunk)
        case 'buffering': return this.readBuffered(chunk)
        case 'streaming': return this.readStreamed(chunk)
        case 'done': return this.conn.destroy()
      }
    } catch (err) {
      this.abandon(new UpstreamError(err instanceof ProtocolError ? 'protocol' : 'internal', (err as Error).message))
    }
  }

  onClose(error: Error | undefined): void {
    const reason = error ? `: ${error.message}` : ''
    switch (this.phase) {
      case 'head':
        if (!this.received && this.conn.served > 0 && this.requestSent) {
          return this.abandon(new UpstreamError('stale', 'kept-alive connection closed by the container'))
        }
        return this.abandon(new UpstreamError('unreachable', `container closed the connection before answering${reason}`))
      case 'buffering':
        return this.abandon(new UpstreamError('unreachable', `container closed the connection mid-response${reason}`))
      case 'streaming':
        if (this.framing === 'close') return this.endStream()
        return this.abandon(new UpstreamError('unreachable', `container closed the connection mid-body${reason}`))
    }
  }

  private readHead(chunk: Buffer): void {
    let buf = this.headBytes === null ? chunk : Buffer.concat([this.headBytes, chunk])
    for (;;) {
      const end = buf.indexOf(HEAD_END)
      if (end === -1) {
        if (buf.length > MAX_HEAD_BYTES) throw new ProtocolError('response head too large')
        this.headBytes = buf
        return
      }
      const head = heads.read(buf.toString('latin1', 0, end), this.method)
      buf = buf.subarray(end + 4)
      // Interim responses (100, 102, 103) are for this hop only; the final one follows.
      if (head.status < 200) continue
      this.headBytes = null
      this.status = head.status
      this.keepAlive = head.keepAlive
      this.framing = head.framing
      this.headers = head.headers
      return this.startBody(buf)
    }
  }

  private startBody(rest: Buffer): void {
    const framing = this.framing
    if (framing === 'none') {
      if (rest.length > 0) this.keepAlive = false
      return this.respondWhole(null, 0)
    }
    if (framing === 'chunked') {
      this.decoder = new ChunkedDecoder()
      const end = this.decoder.push(rest, (piece) => this.pieces.push(piece))
      if (end !== -1) {
        if (end < rest.length) this.keepAlive = false
        return this.respondWhole(joined(this.pieces))
      }
      return this.startStream()
    }
    if (framing === 'close') {
      if (rest.length > 0) this.pieces.push(rest)
      return this.startStream()
    }
    if (rest.length >= framing.length) {
      if (rest.length > framing.length) this.keepAlive = false
      return this.respondWhole(rest.subarray(0, framing.length))
    }
    this.remaining = framing.length - rest.length
    if (rest.length > 0) this.pieces.push(rest)
    if (framing.length <= BUFFER_LIMIT) this.phase = 'buffering'
    else this.startStream()
  }

  private readBuffered(chunk: Buffer): void {
    if (chunk.length < this.remaining) {
      this.pieces.push(chunk)
      this.remaining -= chunk.length
      return
    }
    if (chunk.length > this.remaining) this.keepAlive = false
    this.pieces.push(chunk.subarray(0, this.remaining))
    this.remaining = 0
    this.respondWhole(joined(this.pieces))
  }

  private readStreamed(chunk: Buffer): void {
    if (this.decoder !== null) {
      const end = this.decoder.push(chunk, (piece) => this.enqueue(piece))
      if (end === -1) return
      if (end < chunk.length) this.keepAlive = false
      return this.endStream()
    }
    if (this.framing === 'close') return this.enqueue(chunk)
    if (chunk.length < this.remaining) {
      this.remaining -= chunk.length
      return this.enqueue(chunk)
    }
    if (chunk.length > this.remaining) this.keepAlive = false
    this.enqueue(chunk.subarray(0, this.remaining))
    this.remaining = 0
    this.endStream()
  }

  /** The whole body is here: answer with it in one piece and end the exchange. */
  private respondWhole(body: Buffer | null, length = body?.length ?? 0): void {
    const response = this.build(body as Uint8Array<ArrayBuffer> | null)
    if (body !== null) (response as WithWholeBody)[WHOLE_BODY] = body
    this.phase = 'done'
    this.pieces = []
    this.hooks.settled(this)
    this.resolve(response)
    this.hooks.done(this.status, length)
    this.release()
  }

  private startStream(): void {
    const stream = new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.controller = controller
        },
        pull: () => {
          if (this.paused) {
            this.paused = false
            this.conn.resume()
          }
        },
        cancel: () => this.clientGone(),
      },
      { highWaterMark: STREAM_HIGH_WATER, size: (chunk) => chunk!.byteLength },
    )
    const response = this.build(stream)
    this.phase = 'streaming'
    const pieces = this.pieces
    this.pieces = []
    for (const piece of pieces) this.enqueue(piece)
    this.hooks.settled(this)
    this.resolve(response)
  }

  /** The client's Response: the container's status, the head's fields (copied by the init) and `body`. */
  private build(body: BodyInit | null): Response {
    return new Response(body, { status: this.status, headers: this.headers! })
  }

  private enqueue(data: Buffer): void {
    if (data.length === 0) return
    this.controller!.enqueue(data)
    this.bytesOut += data.length
    if (!this.paused && this.controller!.desiredSize! <= 0) {
      this.paused = true
      this.conn.pause()
    }
  }

  private endStream(): void {
    if (this.phase !== 'streaming') return
    this.phase = 'done'
    this.controller!.close()
    if (this.paused) {
      this.paused = false
      this.conn.resume()
    }
    this.hooks.done(this.status, this.bytesOut)
    this.release()
  }

  /** The client went away mid-body: what was sent counts, and the connection is unusable. */
  private clientGone(): void {
    if (this.phase !== 'streaming') return
    this.phase = 'done'
    this.hooks.done(this.status, this.bytesOut)
    this.conn.destroy()
  }

  /** Ends the exchange on an error: no response yet means the failure answer, else a cut-off body. */
  private abandon(error: UpstreamError): void {
    const phase = this.phase
    if (phase === 'done') return
    this.phase = 'done'
    this.conn.destroy()
    if (phase === 'streaming') {
      this.controller!.error(error)
      this.hooks.done(this.status, this.bytesOut)
      return
    }
    this.pieces = []
    this.hooks.settled(this)
    this.resolve(this.hooks.failed(error))
  }

  private release(): void {
    if (this.keepAlive && this.requestSent && !this.conn.closed) {
      this.conn.served++
      this.pool.release(this.conn, performance.now())
    } else {
      this.conn.destroy()
    }
  }

  private async pump(body: ReadableStream<Uint8Array>, chunked: boolean): Promise<void> {
    const reader = body.getReader()
    const conn = this.conn
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (conn.closed || conn.user !== this) {
          void reader.cancel().catch(() => {})
          return
        }
        if (done) break
        if (value.byteLength === 0) continue
        if (chunked) {
          conn.write(Buffer.from(`${value.byteLength.toString(16)}\r\n`, 'latin1'))
          conn.write(value)
          conn.write(CRLF)
        } else {
          conn.write(value)
        }
        if (!conn.flushed) await conn.whenFlushed()
      }
      if (chunked) conn.write(LAST_CHUNK)
      this.requestSent = true
    } catch (err) {
      this.abandon(new UpstreamError('client_aborted', `request body broke off: ${(err as Error).message}`))
    }
  }
}

function joined(pieces: Buffer[]): Buffer {
  return pieces.length === 1 ? pieces[0]! : Buffer.concat(pieces)
}
