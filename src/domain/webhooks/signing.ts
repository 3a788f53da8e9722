import { createHmac, randomBytes } from 'node:crypto'

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/, docs/api.md "Webhooks"): the
 * secret is `whsec_` and the base64 of 32 random bytes; a delivery's signature is
 * `v1,` + base64(HMAC-SHA256(key, `{webhook-id}.{webhook-timestamp}.{body}`)), one per secret in
 * use, separated by spaces (the newest first: during the 24 h after a rotation, both).
 */
export const SECRET_PREFIX = 'whsec_'

export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64')
}

/** One `v1,<base64>` signature of the message with one secret. */
export function signatureOf(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64')
  return 'v1,' + createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64')
}

/** The three Standard Webhooks headers of one attempt, signed with every secret given (newest first). */
export function webhookHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': secrets.map((s) => signatureOf(s, id, timestampSeconds, body)).join(' '),
  }
}
