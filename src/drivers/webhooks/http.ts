import http from 'node:http'
import https from 'node:https'
import type { LookupFunction } from 'node:net'
import { HostNotFoundError, OutboundRefusedError } from '../net/errors'
import type { OutboundCheck } from '../net/outbound'
import type { WebhookAnswer, WebhookPost, WebhookTransport } from './types'

/** A delivery gets no answer after this long: it failed, and is tried again later. */
export const WEBHOOK_TIMEOUT_MS = 15_000
/** At most this much of an answer's body is read (and thrown away): only its status counts. */
const MAX_ANSWER_BYTES = 64 * 1024

/**
 * Sends webhooks over node:http(s): the host is checked (OutboundCheck: resolved once, refused
 * when loopback, private, link-local or Berth's own unless outbound.allow_networks lists it) at
 * every attempt, and the connection goes to the address the check returned through the request's
 * `lookup`, so a name that answers differently a moment later reaches nothing new. The Host header
 * and TLS's server name stay the URL's host. node:http follows no redirect: a 3xx is an answer like
 * any other, and the delivery failed.
 */
export class HttpWebhookTransport implements WebhookTransport {
  constructor(private readonly outbound: Pick<OutboundCheck, 'check'>, private readonly timeoutMs = WEBHOOK_TIMEOUT_MS) {}

  async post(request: WebhookPost): Promise<WebhookAnswer> {
    const url = new URL(request.url)
    let address: string
    let family: 4 | 6
    try {
      ;({ address, family } = await this.outbound.check(url.hostname))
    } catch (err) {
      if (err instanceof OutboundRefusedError) return { kind: 'refused', message: err.message }
      if (err instanceof HostNotFoundError) return { kind: 'unreachable', message: err.message, timedOut: false }
      throw err
    }
    const pinned: LookupFunction = (_host, options, callback) => {
      if ((options as { all?: boolean }).all) (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address, family }])
      else callback(null, address, family)
    }
    const client = url.protocol === 'https:' ? https : http
    return await new Promise<WebhookAnswer>((resolve) => {
      let settled = false
      const done = (answer: WebhookAnswer) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve(answer)
      }
      const req = client.request(url, {
        method: 'POST',
        lookup: pinned,
        headers: { ...request.headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(request.body)) },
      }, (res) => {
        let read = 0
        const status = res.statusCode ?? 0
        const retryAfter = typeof res.headers['retry-after'] === 'string' ? res.headers['retry-after'] : null
        res.on('data', (chunk: Buffer) => {
          read += chunk.length
          if (read > MAX_ANSWER_BYTES) {
            done({ kind: 'answered', status, retryAfter })
            res.destroy()
          }
        })
        res.on('end', () => done({ kind: 'answered', status, retryAfter }))
        res.on('error', () => done({ kind: 'answered', status, retryAfter }))
      })
      const timer = setTimeout(() => {
        done({ kind: 'unreachable', message: `No answer within ${Math.round(this.timeoutMs / 1000)} s.`, timedOut: true })
        req.destroy()
      }, this.timeoutMs)
      req.on('error', (err) => done({ kind: 'unreachable', message: `The connection failed: ${err.message}`, timedOut: false }))
      req.end(request.body)
    })
  }
}
