import type { Socket } from 'node:net'
import { connectEngine, type EngineAddress } from './engine'

/** The request asked on the link: HEAD answers carry no body, so an answer ends at its blank line. */
const PING = 'HEAD /_ping HTTP/1.1\r\nHost: docker\r\nUser-Agent: berth\r\n\r\n'
/** An answer's head is a few hundred bytes; more without a blank line is not the engine. */
const MAX_HEAD_BYTES = 16_384

/**
 * One connection to the engine, kept open, on which `HEAD /_ping` is asked again and again. A
 * connection cannot outlive the engine process that accepted it, so an answer on it proves that
 * the engine has not restarted since the link opened, whatever another long-lived connection on
 * the same socket was told: the event stream's end, close or error may never reach Berth after
 * an engine restart (issue 22), but a restarted engine cannot answer here.
 *
 * Contract: `check()` resolves once the engine answers (any HTTP status: it is alive) and
 * rejects when it does not within `timeoutMs`, when the connection closes or fails, or when it
 * answers with something that is not HTTP. After the first rejection the link is dead and every
 * later `check()` rejects at once: open a new link. One check at a time.
 *
 * @example
 * const link = new EngineLink('/var/run/docker.sock', 3_000)
 * await link.check() // opens the connection and pings
 * await link.check() // same connection: the engine has not restarted in between
 */
export class EngineLink {
  private socket: Socket | null = null
  private failure: Error | null = null
  private waiting: { done(): void; fail(err: Error): void } | null = null
  private received = ''

  constructor(private readonly address: EngineAddress, private readonly timeoutMs: number) {}

  check(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure)
    if (this.waiting) return Promise.reject(new Error('a check is already under way'))
    return new Promise<void>((done, fail) => {
      const timer = setTimeout(() => this.kill(new Error(`the engine did not answer within ${this.timeoutMs} ms`)), this.timeoutMs)
      this.waiting = {
        done: () => (clearTimeout(timer), done()),
        fail: (err) => (clearTimeout(timer), fail(err)),
      }
      this.received = ''
      if (this.socket) this.socket.write(PING)
      else this.open()
    })
  }

  /** Closes the connection; a check under way rejects. Idempotent. */
  close(): void {
    this.kill(new Error('the link was closed'))
  }

  private open(): void {
    const { socket, ready } = connectEngine(this.address)
    this.socket = socket
    socket.setEncoding('latin1')
    socket.on(ready, () => socket.write(PING))
    socket.on('data', (chunk: string) => this.onData(chunk))
    socket.on('end', () => this.kill(new Error('the engine closed the connection')))
    socket.on('close', () => this.kill(new Error('the engine closed the connection')))
    socket.on('error', (err) => this.kill(err))
  }

  private onData(chunk: string): void {
    if (!this.waiting) return this.kill(new Error('the engine sent data nobody asked for'))
    this.received += chunk
    const end = this.received.indexOf('\r\n\r\n')
    if (end < 0) {
      if (this.received.length > MAX_HEAD_BYTES) this.kill(new Error('the answer is not HTTP'))
      return
    }
    if (!/^HTTP\/1\.[01] \d{3}/.test(this.received)) return this.kill(new Error('the answer is not HTTP'))
    if (end + 4 !== this.received.length) return this.kill(new Error('the engine sent more than one answer'))
    const { done } = this.waiting
    this.waiting = null
    done()
  }

  private kill(err: Error): void {
    if (!this.failure) this.failure = err
    this.socket?.destroy()
    const waiting = this.waiting
    this.waiting = null
    waiting?.fail(this.failure)
  }
}
