/**
 * The webhook sender's contract (drivers/webhooks/http.ts): one POST of a signed body to an
 * endpoint's URL, connected to the address the outbound check allowed (never a second lookup),
 * following no redirect, given up after the timeout.
 */
export interface WebhookPost {
  url: string
  headers: Record<string, string>
  body: string
}

/** What came of one attempt: the receiver's answer, or why none came. */
export type WebhookAnswer =
  | { kind: 'answered'; status: number; retryAfter: string | null }
  /** The URL's host resolves to an address Berth does not connect to (drivers/net/outbound.ts). */
  | { kind: 'refused'; message: string }
  /** No answer: the host does not resolve, the connection failed, or the timeout passed. */
  | { kind: 'unreachable'; message: string; timedOut: boolean }

export interface WebhookTransport {
  post(request: WebhookPost): Promise<WebhookAnswer>
}
