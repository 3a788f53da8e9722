/**
 * A payment processor, shaped after Stripe: a hosted payment page confirmed by a callback, a
 * direct charge of a payment-method id, refunds, and a billing-portal URL. The built-in `local`
 * processor implements it in test mode; a Stripe driver plugs in behind the same interface.
 *
 * Contracts, for every implementation:
 * - Amounts are integer minor units (CAD cents); currency is ISO 4217 lower-case for the processor.
 * - `charge` never throws for a declined card: it returns `{ ok: false }`; it throws only when the
 *   processor cannot be reached (the caller answers 503 and changes nothing).
 * - `refund` is idempotent per payment: refunding a refunded payment returns the first refund.
 * - Events for a hosted payment are delivered to the listener at least once; listeners must be
 *   idempotent (the checkout service is: a completed session ignores a second `paid`).
 */
export interface PaymentProcessor {
  readonly name: string
  /** True when no real money moves; shown by GET /status/, the hosted page and receipts. */
  readonly testMode: boolean
  createHostedCheckout(input: HostedCheckoutInput): Promise<HostedCheckout>
  charge(input: ChargeInput): Promise<ChargeResult>
  refund(input: { paymentRef: string; amountCents: number; reason: string }): Promise<{ refundRef: string }>
  billingPortalUrl(input: { accountId: string; returnUrl: string; flow: '' | 'payment_method_update' }): Promise<string>
  onEvent(listener: (event: ProcessorEvent) => Promise<void>): void
}

export interface HostedCheckoutInput {
  /** Our checkout session id, echoed back in events. */
  reference: string
  amountCents: number
  currency: string
  description: string
  customerEmail: string | null
}

export interface HostedCheckout {
  sessionRef: string
  url: string
}

export interface ChargeInput {
  reference: string
  amountCents: number
  currency: string
  paymentMethodId: string
  description: string
}

export type ChargeResult =
  | { ok: true; paymentRef: string; methodLabel: string }
  | { ok: false; declineCode: string; message: string }

export type ProcessorEvent =
  /** The buyer submitted the hosted page; the processor has the payment but has not settled it. */
  | { type: 'checkout.processing'; sessionRef: string; reference: string }
  /** The hosted payment settled. */
  | { type: 'checkout.paid'; sessionRef: string; reference: string; paymentRef: string; methodLabel: string; amountCents: number }

export class ProcessorUnavailableError extends Error {}
