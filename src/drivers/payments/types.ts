/**
 * A payment processor, shaped after Stripe: a hosted payment page confirmed by a callback, a
 * direct charge of a payment-method id, refunds, a billing portal and webhooks. The built-in
 * `local` processor implements it in test mode; the Stripe driver plugs in behind the same
 * interface (config `payments.processor`).
 *
 * Contracts, for every implementation:
 * - Amounts are integer minor units (CAD cents); currency is ISO 4217 lower-case for the processor.
 * - `charge` never throws for a declined card: it returns `{ ok: false }`; it throws
 *   ProcessorUnavailableError only when the processor cannot be reached (the caller answers 503
 *   and changes nothing).
 * - `charge` is idempotent per `idempotencyKey`: a second call with the same key returns the first
 *   call's outcome and moves no money again (Stripe's Idempotency-Key; the local processor keeps a
 *   ledger). Renewals rely on this to survive a `kill -9` between the charge and its record.
 * - `refund` is idempotent per payment: refunding a refunded payment returns the first refund.
 * - Events are delivered to the listeners at least once; listeners must be idempotent (the
 *   checkout service is: a completed session ignores a second `paid`).
 */
export interface PaymentProcessor {
  readonly name: string
  /** True when no real money moves; shown by GET /status/, the hosted page and receipts. */
  readonly testMode: boolean
  createHostedCheckout(input: HostedCheckoutInput): Promise<HostedCheckout>
  charge(input: ChargeInput): Promise<ChargeResult>
  refund(input: { paymentRef: string; amountCents: number; reason: string }): Promise<{ refundRef: string }>
  /**
   * Where the account's owner manages its payment method (and, with the built-in portal, sees
   * payments and cancels). `customerRef` is the processor's customer for the account, when one
   * exists. The URL is valid until `expiresAt` (epoch ms).
   */
  billingPortal(input: BillingPortalInput): Promise<{ url: string; expiresAt: number }>
  /**
   * A webhook delivery from the processor: verifies it (signature, 300 s tolerance), turns it
   * into events for the listeners, and says what to answer. Only processors that call back over
   * HTTP have it (Stripe); the built-in one emits its events directly.
   */
  webhook?(rawBody: string, headers: Headers): Promise<WebhookOutcome>
  onEvent(listener: (event: ProcessorEvent) => Promise<void>): void
}

export interface HostedCheckoutInput {
  /** Our checkout session id, echoed back in events. */
  reference: string
  amountCents: number
  currency: string
  description: string
  customerEmail: string | null
  /** Where the hosted page sends the buyer after paying or giving up. */
  returnUrl?: string
}

export interface HostedCheckout {
  sessionRef: string
  url: string
}

export interface ChargeInput {
  /** What the charge is for on our side (checkout id, `renewal:<subscription>`...), for the processor's metadata. */
  reference: string
  /** The same key returns the same outcome and never charges twice. */
  idempotencyKey: string
  amountCents: number
  currency: string
  paymentMethodId: string
  description: string
  /** The processor's customer the method belongs to, once the account has one. */
  customerRef?: string | null
  /** For a new customer (the first purchase of an anonymous buyer). */
  customerEmail?: string | null
  /** The payer is not present (renewals, prorations): the processor charges off-session. */
  offSession?: boolean
}

export type ChargeResult =
  | {
    ok: true
    paymentRef: string
    methodLabel: string
    /** The method to keep on file: may differ from the input (a processor's test token becomes a saved method). */
    paymentMethodId: string
    /** The processor's customer holding the method, when the processor has customers. */
    customerRef: string | null
  }
  | { ok: false; declineCode: string; message: string }

export interface BillingPortalInput {
  accountId: string
  customerRef: string | null
  returnUrl: string
  /** `payment_method_update` opens straight on the card form. */
  flow: '' | 'payment_method_update'
}

export interface WebhookOutcome {
  /** HTTP status to answer the processor: 200 once handled (or a duplicate), 400 for a bad signature. */
  status: number
  message: string
}

export type ProcessorEvent =
  /** The buyer submitted the hosted page; the processor has the payment but has not settled it. */
  | { type: 'checkout.processing'; sessionRef: string; reference: string }
  /** The hosted payment settled. `paymentMethodId`/`customerRef` are kept on file when given. */
  | {
    type: 'checkout.paid'; sessionRef: string; reference: string; paymentRef: string; methodLabel: string; amountCents: number
    paymentMethodId?: string; customerRef?: string | null
  }
  /** The hosted payment failed for good or its session expired at the processor. */
  | { type: 'checkout.expired'; sessionRef: string; reference: string }
  /**
   * The account's owner replaced the payment method through the processor's billing portal:
   * Berth keeps it on file and retries what is unpaid at once.
   */
  | { type: 'payment_method.updated'; customerRef: string | null; accountId: string | null; paymentMethodId: string; methodLabel: string }

export class ProcessorUnavailableError extends Error {}
