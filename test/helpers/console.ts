import { expect } from 'vitest'
import { api } from './binary'

/** POST /sites/{slug}/console/ answered 201: the ticket and its URLs. */
export async function openTicket(url: string, key: string, slug: string): Promise<{ ticket: string; expires_at: string; websocket_url: string; page_url: string }> {
  const res = await api(url, 'POST', `/sites/${slug}/console/`, { key })
  expect(res.status, res.text).toBe(201)
  return res.json.data
}

/** The answer to a WebSocket upgrade request refused before the upgrade: its status and text. */
export async function upgradeRefusal(websocketUrl: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(websocketUrl.replace(/^ws/, 'http'), {
    headers: { upgrade: 'websocket', connection: 'Upgrade', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-version': '13', ...headers },
  })
  return { status: res.status, text: await res.text() }
}

/** Bun's WebSocket constructor, which takes options (`tls`, `headers`); the DOM's type, which the project's lib includes, knows only protocols. */
const BunWebSocket = WebSocket as unknown as new (url: string, options?: Bun.WebSocketOptions) => WebSocket

/** A console session through a plain WebSocket client (Bun's), as a program would drive one. */
export class ConsoleClient {
  /** The terminal's output so far, as text. */
  output = ''
  /** The text frames received (control messages), parsed. */
  readonly controls: Record<string, unknown>[] = []
  readonly closed: Promise<{ code: number; reason: string }>
  readonly opened: Promise<void>
  private ws: WebSocket

  /** `options`: Bun's WebSocket options (`tls`, `headers`), e.g. to trust a test CA. */
  constructor(websocketUrl: string, query = '', options?: Bun.WebSocketOptions) {
    this.ws = new BunWebSocket(websocketUrl + query, options)
    this.ws.binaryType = 'arraybuffer'
    this.opened = new Promise((done, fail) => {
      this.ws.onopen = () => done()
      this.ws.onerror = (e) => fail(new Error((e as ErrorEvent).message ?? 'WebSocket error'))
    })
    this.opened.catch(() => {})
    this.closed = new Promise((done) => (this.ws.onclose = (e) => done({ code: e.code, reason: e.reason })))
    this.ws.onmessage = (e) => {
      if (typeof e.data === 'string') this.controls.push(JSON.parse(e.data))
      else this.output += new TextDecoder().decode(e.data as ArrayBuffer)
    }
  }

  /** Types `text` (a binary frame of its UTF-8 bytes). */
  type(text: string): void {
    this.ws.send(new TextEncoder().encode(text))
  }

  /** Sends a text frame as it is (a control message, or a broken one). */
  sendText(text: string): void {
    this.ws.send(text)
  }

  resize(cols: number, rows: number): void {
    this.sendText(JSON.stringify({ type: 'resize', cols, rows }))
  }

  close(): void {
    this.ws.close()
  }

  /** Waits until the output after `from` matches `pattern`. */
  async waitFor(pattern: RegExp, from = 0, timeoutMs = 10_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const m = this.output.slice(from).match(pattern)
      if (m) return m
      if (Date.now() > deadline) throw new Error(`no ${pattern} in ${JSON.stringify(this.output.slice(from))}`)
      await Bun.sleep(10)
    }
  }

  /** The last control message, once the socket closed. */
  async ending(timeoutMs = 10_000): Promise<{ control: Record<string, unknown> | undefined; close: { code: number; reason: string } }> {
    const close = await Promise.race([this.closed, Bun.sleep(timeoutMs).then(() => { throw new Error(`the console did not close within ${timeoutMs} ms; output: ${JSON.stringify(this.output)}`) })])
    return { control: this.controls.at(-1), close }
  }
}
