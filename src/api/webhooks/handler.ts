import type { PaymentProcessor } from '../../drivers/payments/types'
import type { Logger } from '../../lib/logger'

/** Where the processor's webhooks arrive: `{site_url}/webhooks/{processor}/` (docs/payments.md). */
export const WEBHOOK_PATH = /^\/webhooks\/([a-z]+)\/?$/
const MAX_WEBHOOK_BYTES = 1024 * 1024

/**
 * The processor's webhook deliveries, answered outside the API's envelope, body parser and rate
 * limits: the signature is over the exact bytes sent, so the body is read raw. Only a processor
 * that calls back over HTTP (Stripe) has one; any other path or processor answers 404.
 */
export function webhookHandler(processor: PaymentProcessor, log: Logger) {
  return async (request: Request, name: string): Promise<Response> => {
    if (name !== processor.name || !processor.webhook) return new Response('No webhook endpoint here.\n', { status: 404, headers: { 'content-type': 'text/plain' } })
    if (request.method !== 'POST') return new Response('Webhooks are POSTed.\n', { status: 405, headers: { allow: 'POST', 'content-type': 'text/plain' } })
    const declared = Number(request.headers.get('content-length') ?? '0')
    if (declared > MAX_WEBHOOK_BYTES) return new Response('Too large.\n', { status: 413, headers: { 'content-type': 'text/plain' } })
    const body = await request.text()
    if (body.length > MAX_WEBHOOK_BYTES) return new Response('Too large.\n', { status: 413, headers: { 'content-type': 'text/plain' } })
    try {
      const outcome = await processor.webhook(body, request.headers)
      return new Response(`${outcome.message}\n`, { status: outcome.status, headers: { 'content-type': 'text/plain' } })
    } catch (err) {
      log.error('webhook handling failed; the processor will deliver it again', { processor: processor.name, error: (err as Error).message })
      return new Response('Internal error; retry later.\n', { status: 500, headers: { 'content-type': 'text/plain' } })
    }
  }
}
