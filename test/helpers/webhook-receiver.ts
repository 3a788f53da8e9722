import { Webhook } from 'standardwebhooks'

/** One request as the receiver got it. */
export interface Received {
  id: string
  timestamp: string
  signature: string
  body: string
  headers: Record<string, string>
  host: string | null
  path: string
}

type Answer = (r: Received, n: number) => Response | Promise<Response>

/**
 * A real webhook receiver for tests: an HTTP server on 127.0.0.1 (Bun.serve) that keeps every
 * request and answers as the test says (200 unless told otherwise). Deliveries are verified with
 * the Standard Webhooks specification's own library (`verifiedBy`), never with Berth's code.
 */
export class WebhookReceiver {
  readonly received: Received[] = []
  answer: Answer = () => new Response('ok')
  private readonly server: ReturnType<typeof Bun.serve>

  /** `port`: 0 for any free one, or the port of a receiver that stopped (the same receiver back). */
  constructor(port = 0) {
    this.server = Bun.serve({
      hostname: '127.0.0.1',
      port,
      fetch: async (req) => {
        const body = await req.text()
        const headers: Record<string, string> = {}
        req.headers.forEach((value, name) => {
          headers[name] = value
        })
        const r: Received = {
          id: headers['webhook-id'] ?? '', timestamp: headers['webhook-timestamp'] ?? '', signature: headers['webhook-signature'] ?? '',
          body, headers, host: req.headers.get('host'), path: new URL(req.url).pathname,
        }
        this.received.push(r)
        return await this.answer(r, this.received.length)
      },
    })
  }

  get port(): number {
    return this.server.port!
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`
  }

  async until(count: number, ms = 5000): Promise<void> {
    const end = Date.now() + ms
    while (this.received.length < count) {
      if (Date.now() > end) throw new Error(`the receiver got ${this.received.length} requests, not ${count}, within ${ms} ms`)
      await Bun.sleep(5)
    }
  }

  /** Closes the server and every connection to it; resolved once it no longer accepts any. */
  async stop(): Promise<void> {
    await this.server.stop(true)
  }
}

/**
 * The payload as standardwebhooks' Webhook.verify reads it (it throws on a bad signature or a
 * timestamp more than 5 minutes from the receiver's clock), the receiver's clock reading `nowMs`
 * (Berth's manual clock in the in-process tests: the two agree, as real clocks would).
 */
export function verifiedBy(secret: string, r: Received, nowMs: number): unknown {
  const real = Date.now
  Date.now = () => nowMs
  try {
    return new Webhook(secret).verify(r.body, r.headers)
  } finally {
    Date.now = real
  }
}
