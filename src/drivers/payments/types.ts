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
 *   call's outcome and moves no money again (Stripe's Idempotency-Key, and past Stripe's 24 hours
 *   a look-up of the payment made under the key; the local processor keeps a ledger). Renewals
 *   rely on this to survive a `kill -9` between the charge and its record.
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
  /**
   * The pages this processor serves from Berth's own listener, when it has any: the built-in
   * processor's hosted payment page and billing portal. Stripe hosts its own and has none. The
   * composition root's choice of processor decides, through this, which of them exist
   * (src/api/app.ts mounts /pay/ and /billing/portal/ only when it is present).
   */
  readonly pages?: ProcessorPages
}

/**
 * Test payment-method ids, named as Stripe's and accepted in test mode by both processors: what
 * the discovery documents offer an agent to pay with (design.md, Checkout).
 */
export const TEST_PAYMENT_METHODS = ['pm_card_visa', 'pm_card_mastercard', 'pm_card_visa_chargeDeclined', 'pm_card_chargeDeclinedInsufficientFunds'] as const
export type TestPaymentMethod = (typeof TEST_PAYMENT_METHODS)[number]

/**
 * A processor's own pages, served outside /api/v1 as Stripe's checkout.stripe.com and
 * billing.stripe.com would be: `{site_url}/pay/{ref}/` (the hosted payment page) and
 * `{site_url}/billing/portal/{token}/` (the billing portal). The HTTP side (routes, CSRF cookies,
 * statuses) is src/api/pay and src/api/portal; what a page shows and what a card does are the
 * processor's.
 */
export interface ProcessorPages {
  /** The hosted payment page's session, or null when the reference names none. */
  session(sessionRef: string): HostedSessionInfo | null
  /** The payment page's Pay button: pays the session with a card, or says which field is wrong. */
  submitCard(sessionRef: string, card: CardSubmission): Promise<CardResult>
  /** The payment method a card stands for on the portal's card form, or why it is refused. */
  methodForCard(card: CardSubmission): { ok: true; methodId: string; label: string } | { ok: false; field: 'number' | 'expiry' | 'cvc'; message: string }
  /** The hosted payment page's HTML; `error` is why a form post did not pay. */
  paymentPage(ref: string, session: HostedSessionInfo | null, opts?: { csrf?: string; error?: string }): string
  /** The billing portal's HTML for one account. */
  portal(d: PortalData, opts: { csrf: string; error?: string; notice?: string; focusCard?: boolean }): string
  /** The portal's answer to a link that is wrong, expired, or whose account is gone. */
  portalGone(lang?: 'en' | 'fr'): string
  /** One payment's receipt page. */
  receipt(r: ReceiptData): string
}

/** What the hosted page needs to show for one of its sessions. */
export interface HostedSessionInfo {
  reference: string
  amountCents: number
  currency: string
  description: string
  /** open: can be paid; processing/paid: already submitted; closed: canceled or expired. */
  state: 'open' | 'processing' | 'paid' | 'closed'
}

export type CardSubmission = { number: string; expMonth: number; expYear: number; cvc: string }
export type CardResult = { ok: true } | { ok: false; field: 'number' | 'expiry' | 'cvc' | 'session'; message: string; declined?: boolean }

/** What the built-in billing portal shows of an account. */
export interface PortalData {
  token: string
  language: 'en' | 'fr'
  email: string | null
  method: string | null
  subscriptions: {
    id: string
    plan: string
    period: string
    status: string
    amountCents: number
    periodEnd: number
    cancelAtPeriodEnd: boolean
    sites: string[]
    lastChargeError: string | null
  }[]
  payments: { id: string; createdAt: number; description: string; amountCents: number; status: string; method: string; kind: string }[]
  expiresAt: number
}

export interface ReceiptData {
  language: 'en' | 'fr'
  brand: string
  token: string
  id: string
  createdAt: number
  description: string
  amountCents: number
  status: string
  method: string
  processorRef: string
  testMode: boolean
  email: string | null
  kind: string
  refundedAt: number | null
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
  /**
   * When the charge's payment was first opened (epoch ms), so a processor that forgets keys
   * (Stripe, after 24 hours) looks up what it made under the key before charging again.
   */
  openedAt?: number
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
