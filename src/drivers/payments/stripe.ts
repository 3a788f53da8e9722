import Stripe from 'stripe'
import { systemClock, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import { VERSION } from '../../version'
import {
  ProcessorUnavailableError,
  type BillingPortalInput, type ChargeInput, type ChargeResult, type HostedCheckout, type HostedCheckoutInput,
  type PaymentProcessor, type ProcessorEvent, type WebhookOutcome,
} from './types'

/**
 * Which webhook events were acted on, kept in Berth's store so that a redelivery after a restart
 * is still recognised. Stripe delivers each event at least once, sometimes twice at the same
 * moment, and again until it gets a 2xx; so a delivery claims the event before acting on it
 * (one claim wins, whatever the timing), marks it settled once every listener succeeded, and
 * releases the claim when one failed, so that Stripe's retry is acted on.
 */
export interface WebhookEventLedger {
  /**
   * Claims `eventId` for this delivery: true for exactly one caller (it acts on the event),
   * false when the event was claimed before, acted on or still being acted on. Atomic.
   */
  claim(eventId: string): boolean
  /** Records a claimed event as acted on, for good. */
  settle(eventId: string): void
  /** Gives up a claim whose handling failed: the next delivery of the event claims it again. */
  release(eventId: string): void
}

export interface StripeProcessorDeps {
  /** `sk_test_...` (test mode: no real money moves) or `sk_live_...`; restricted `rk_` keys work too. */
  secretKey: string
  /** The `whsec_...` signing secret of the webhook endpoint `{site_url}/webhooks/stripe/`. */
  webhookSecret: string
  /** Berth's public origin: where the hosted page sends the buyer back when no returnUrl is given. */
  siteUrl: string
  /** Origin of the Stripe API, e.g. `http://127.0.0.1:12345` for a fake; default Stripe's own. */
  apiBase?: string
  events: WebhookEventLedger
  log: Logger
  /** Berth's clock, for the billing-portal expiry (default: the system clock). */
  clock?: Clock
}

/** Signatures older than this are refused (Stripe's default tolerance; design.md). */
const WEBHOOK_TOLERANCE_SECONDS = 300
/**
 * Stripe does not state a portal session's lifetime in its answer; its docs call the sessions
 * short-lived and tell integrations to create one each time the customer wants the portal. Berth
 * shows the URL as valid for 5 minutes, so callers send the owner there at once and ask again later.
 */
const PORTAL_SESSION_TTL_MS = 5 * 60_000
/**
 * Stripe keeps an idempotency key for at least 24 hours, then may forget it: a payment opened
 * longer ago than this (less an hour for the clocks' difference) may have been charged under a
 * key Stripe no longer knows, and is looked up at Stripe before it is charged again.
 */
const KEY_SURELY_REMEMBERED_MS = 23 * 3_600_000

/**
 * The Stripe processor (config `payments.processor = "stripe"`), on the official `stripe`
 * package: Checkout Sessions for the hosted page, PaymentIntents for direct and off-session
 * payments, payment methods saved on a Customer, refunds, billing-portal sessions, and webhooks
 * verified by signature (300 s tolerance), each event id acted on once.
 *
 * Money is never moved twice for one idempotency key: every POST carries an Idempotency-Key
 * (ours where the interface gives one, else stripe-node's own for its retries). Stripe keeps
 * idempotent answers for 24 hours; a retry after that is a new request, so a charge whose
 * payment was opened more than 23 hours ago first looks for the PaymentIntent made under its
 * key (metadata `berth_key`) and answers with its state.
 */
export class StripeProcessor implements PaymentProcessor {
  readonly name = 'stripe'
  readonly testMode: boolean
  private stripe: Stripe
  private listeners: ((event: ProcessorEvent) => Promise<void>)[] = []
  // Web Crypto: works in both of stripe-node's builds (Bun loads its worker build, where Node's
  // crypto and the synchronous webhook check are unavailable).
  private crypto = Stripe.createSubtleCryptoProvider()
  private clock: Clock

  constructor(private deps: StripeProcessorDeps) {
    this.testMode = /^(sk|rk)_test_/.test(deps.secretKey)
    this.clock = deps.clock ?? systemClock
    this.stripe = new Stripe(deps.secretKey, {
      httpClient: Stripe.createFetchHttpClient(),
      // Retries reuse the request's Idempotency-Key, so they never charge twice.
      maxNetworkRetries: 2,
      timeout: 30_000,
      appInfo: { name: 'Berth', version: VERSION },
      ...apiOrigin(deps.apiBase),
    })
  }

  async createHostedCheckout(input: HostedCheckoutInput): Promise<HostedCheckout> {
    const back = input.returnUrl ?? this.deps.siteUrl
    try {
      const session = await this.stripe.checkout.sessions.create({
        mode: 'payment',
        line_items: [{ quantity: 1, price_data: { currency: input.currency.toLowerCase(), unit_amount: input.amountCents, product_data: { name: input.description } } }],
        client_reference_id: input.reference,
        metadata: { reference: input.reference },
        customer_email: input.customerEmail ?? undefined,
        // The buyer's card is saved on a Customer, to be charged off-session at renewal.
        customer_creation: 'always',
        payment_intent_data: { setup_future_usage: 'off_session', metadata: { reference: input.reference } },
        success_url: back,
        cancel_url: back,
      })
      if (!session.url) throw new Error(`Stripe created Checkout Session ${session.id} without a URL`)
      return { sessionRef: session.id, url: session.url }
    } catch (err) {
      throw this.failure(err, 'create a Checkout Session')
    }
  }

  /**
   * A PaymentIntent confirmed at once. Without a
   * customer one is created first (with a key derived from the charge's), so the method can be
   * saved: Stripe attaches it to the customer when the payment succeeds (`setup_future_usage`),
   * which leaves no declined card on file. Off-session charges (renewals) use the saved method.
   */
  async charge(input: ChargeInput): Promise<ChargeResult> {
    try {
      if (input.openedAt !== undefined && this.clock.now() - input.openedAt >= KEY_SURELY_REMEMBERED_MS) {
        const earlier = await this.intentOfKey(input.idempotencyKey)
        if (earlier) return this.outcomeOf(earlier)
      }
      const customer = input.customerRef ?? (await this.stripe.customers.create(
        { email: input.customerEmail ?? undefined, metadata: { reference: input.reference } },
        { idempotencyKey: `${input.idempotencyKey}:customer` },
      )).id
      const intent = await this.createIntent(input, customer, { reference: input.reference, berth_key: input.idempotencyKey }).catch((err: unknown) => {
        // The key was first sent by a Berth that did not write `berth_key` (a payment left
        // pending across an upgrade): the same request as then replays its answer.
        if (err instanceof Stripe.errors.StripeIdempotencyError) return this.createIntent(input, customer, { reference: input.reference })
        throw err
      })
      if (intent.status !== 'succeeded') return this.notSucceeded(intent)
      const method = intent.payment_method as Stripe.PaymentMethod
      return { ok: true, paymentRef: intent.id, methodLabel: this.label(method), paymentMethodId: method.id, customerRef: customer }
    } catch (err) {
      if (err instanceof Stripe.errors.StripeCardError) return { ok: false, declineCode: declineCodeOf(err), message: err.message }
      // A method Stripe does not know or that belongs to someone else, or a saved customer that
      // was deleted in the Dashboard: the payer must give another method; nothing was charged.
      if (err instanceof Stripe.errors.StripeInvalidRequestError && (err.param === 'payment_method' || err.param === 'customer')) {
        const hint = this.testMode ? ' In test mode use pm_card_visa (pays) or pm_card_visa_chargeDeclined (declines).' : ''
        return { ok: false, declineCode: 'invalid_payment_method', message: `${err.message.replace(/\.?$/, '.')}${hint}` }
      }
      throw this.failure(err, 'charge a payment method')
    }
  }

  private createIntent(input: ChargeInput, customer: string, metadata: Record<string, string>): Promise<Stripe.PaymentIntent> {
    return this.stripe.paymentIntents.create({
      amount: input.amountCents,
      currency: input.currency.toLowerCase(),
      customer,
      payment_method: input.paymentMethodId,
      // No redirect-based methods: an agent paying through the API cannot follow a redirect.
      automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true,
      description: input.description,
      metadata,
      ...(input.offSession ? { off_session: true } : { setup_future_usage: 'off_session' as const }),
      expand: ['payment_method'],
    }, { idempotencyKey: input.idempotencyKey })
  }

  /**
   * The PaymentIntent made under `key` (its metadata `berth_key`), through Stripe's search (which
   * lags by up to a minute: this is asked of payments opened hours ago); a succeeded one first.
   */
  private async intentOfKey(key: string): Promise<Stripe.PaymentIntent | null> {
    const quoted = key.replace(/[\\']/g, (c) => `\\${c}`)
    const found = await this.stripe.paymentIntents.search({ query: `metadata['berth_key']:'${quoted}'`, limit: 10, expand: ['data.payment_method'] })
    return found.data.find((i) => i.status === 'succeeded') ?? found.data[0] ?? null
  }

  /** What a charge answers for a PaymentIntent found at Stripe: as its first answer was. */
  private outcomeOf(intent: Stripe.PaymentIntent): ChargeResult {
    this.deps.log.warn('stripe payment found by its key after Stripe forgot the key; not charged again', { payment_intent: intent.id, status: intent.status })
    if (intent.status !== 'succeeded') return this.notSucceeded(intent)
    const method = typeof intent.payment_method === 'object' ? intent.payment_method : null
    return { ok: true, paymentRef: intent.id, methodLabel: this.label(method), paymentMethodId: method?.id ?? idOf(intent.payment_method) ?? '', customerRef: idOf(intent.customer) }
  }

  /** Refunds with the key `refund:<paymentRef>`; after Stripe forgot the key, returns the existing refund. */
  async refund(input: { paymentRef: string; amountCents: number; reason: string }): Promise<{ refundRef: string }> {
    try {
      const refund = await this.stripe.refunds.create(
        { payment_intent: input.paymentRef, amount: input.amountCents, metadata: { reason: input.reason.slice(0, 500) } },
        { idempotencyKey: `refund:${input.paymentRef}` },
      )
      return { refundRef: refund.id }
    } catch (err) {
      if (err instanceof Stripe.errors.StripeInvalidRequestError && err.code === 'charge_already_refunded') {
        const existing = await this.stripe.refunds.list({ payment_intent: input.paymentRef, limit: 100 }).catch((e: unknown) => {
          throw this.failure(e, 'list refunds')
        })
        const first = existing.data.at(-1)
        if (first) return { refundRef: first.id }
      }
      throw this.failure(err, 'refund a payment')
    }
  }

  /**
   * A Stripe billing-portal session for the account's customer. An account with no customer yet
   * (it never paid by card through Stripe) gets one made on the spot, tagged with metadata
   * `berth_account` (key derived from the account, so repeated clicks within Stripe's 24 h reuse
   * it): the owner can then add a card, and the `payment_method.updated` event that follows
   * names the account, so Berth learns the customer from it.
   */
  async billingPortal(input: BillingPortalInput): Promise<{ url: string; expiresAt: number }> {
    try {
      const customer = input.customerRef ?? (await this.stripe.customers.create(
        { metadata: { berth_account: input.accountId } },
        { idempotencyKey: `portal-customer:${input.accountId}` },
      )).id
      const session = await this.stripe.billingPortal.sessions.create({
        customer,
        return_url: input.returnUrl,
        ...(input.flow === 'payment_method_update' ? { flow_data: { type: 'payment_method_update' as const } } : {}),
      })
      return { url: session.url, expiresAt: this.clock.now() + PORTAL_SESSION_TTL_MS }
    } catch (err) {
      // Stripe refuses portal sessions until the portal's settings were saved once in the
      // Dashboard: the hoster's to fix, not the agent's.
      if (err instanceof Stripe.errors.StripeInvalidRequestError) {
        throw new ProcessorUnavailableError(`Stripe refused the billing-portal session: ${err.message} (save the customer portal settings once in the Stripe Dashboard: Settings > Billing > Customer portal)`)
      }
      throw this.failure(err, 'open a billing-portal session')
    }
  }

  /**
   * One webhook delivery to `{site_url}/webhooks/stripe/`. 400 for a missing, forged or stale
   * signature; 200 `duplicate` for an event acted on or being acted on by another delivery;
   * 200 `ignored` for events Berth does not use; 500 when a listener (or a look-up at Stripe)
   * failed, the claim released so that Stripe's redelivery acts.
   */
  async webhook(rawBody: string, headers: Headers): Promise<WebhookOutcome> {
    const signature = headers.get('stripe-signature')
    if (!signature) return { status: 400, message: 'missing Stripe-Signature header' }
    let event: Stripe.Event
    try {
      event = await this.stripe.webhooks.constructEventAsync(rawBody, signature, this.deps.webhookSecret, WEBHOOK_TOLERANCE_SECONDS, this.crypto)
    } catch (err) {
      const reason = err instanceof Stripe.errors.StripeSignatureVerificationError ? (err.message.split('\n')[0] ?? '').trim() : 'the body is not a Stripe event'
      this.deps.log.warn('stripe webhook refused', { reason })
      return { status: 400, message: `signature check failed: ${reason}` }
    }
    if (event.livemode === this.testMode) {
      this.deps.log.warn('stripe webhook from the other mode ignored', { event: event.id, type: event.type, livemode: event.livemode })
      return { status: 200, message: 'ignored: live/test mode differs from payments.stripe_secret_key' }
    }
    // Claimed before anything is done: of two deliveries at once, only one acts (issue 23, part 7).
    if (!this.deps.events.claim(event.id)) return { status: 200, message: 'duplicate' }
    try {
      const mapped = await this.toProcessorEvent(event)
      if (!mapped) {
        // Nothing to act on: the store keeps only events acted on.
        this.deps.events.release(event.id)
        return { status: 200, message: 'ignored' }
      }
      for (const listener of this.listeners) await listener(mapped)
      this.deps.events.settle(event.id)
      return { status: 200, message: mapped.type }
    } catch (err) {
      this.deps.events.release(event.id)
      this.deps.log.error('stripe webhook not handled; Stripe will redeliver it', { event: event.id, type: event.type, error: (err as Error).message })
      return { status: 500, message: 'not handled; retry later' }
    }
  }

  onEvent(listener: (event: ProcessorEvent) => Promise<void>): void {
    this.listeners.push(listener)
  }

  /** The Stripe events Berth acts on (docs/payments.md lists them for the hoster), as ours. */
  private async toProcessorEvent(event: Stripe.Event): Promise<ProcessorEvent | null> {
    switch (event.type) {
      case 'checkout.session.completed':
      case 'checkout.session.async_payment_succeeded': {
        const session = event.data.object
        const reference = session.client_reference_id ?? session.metadata?.reference
        if (!reference || session.mode !== 'payment') return null
        // Completed with a delayed method (bank debit): paid later, or failed.
        if (session.payment_status === 'unpaid') return event.type === 'checkout.session.completed' ? { type: 'checkout.processing', sessionRef: session.id, reference } : null
        if (session.payment_status !== 'paid') return null
        const intentId = idOf(session.payment_intent)
        if (!intentId) throw new Error(`paid Checkout Session ${session.id} has no PaymentIntent`)
        const intent = await this.call('read a PaymentIntent', () => this.stripe.paymentIntents.retrieve(intentId, { expand: ['payment_method'] }))
        const method = typeof intent.payment_method === 'object' ? intent.payment_method : null
        return {
          type: 'checkout.paid', sessionRef: session.id, reference, paymentRef: intent.id, methodLabel: this.label(method),
          amountCents: session.amount_total ?? intent.amount, paymentMethodId: method?.id, customerRef: idOf(session.customer) ?? idOf(intent.customer),
        }
      }
      case 'checkout.session.expired':
      case 'checkout.session.async_payment_failed': {
        const session = event.data.object
        const reference = session.client_reference_id ?? session.metadata?.reference
        return reference ? { type: 'checkout.expired', sessionRef: session.id, reference } : null
      }
      case 'setup_intent.succeeded': {
        const intent = event.data.object
        const customer = idOf(intent.customer)
        const method = idOf(intent.payment_method)
        return customer && method ? this.methodUpdated(customer, method) : null
      }
      case 'customer.updated': {
        const customer = event.data.object
        const before = event.data.previous_attributes as { invoice_settings?: { default_payment_method?: unknown } } | undefined
        if (!before?.invoice_settings || !('default_payment_method' in before.invoice_settings)) return null
        const method = idOf(customer.invoice_settings?.default_payment_method)
        return method ? this.methodUpdated(customer, method) : null
      }
      default:
        return null
    }
  }

  private async methodUpdated(customer: string | Stripe.Customer, methodId: string): Promise<ProcessorEvent> {
    const [owner, method] = await Promise.all([
      typeof customer === 'string' ? this.call('read a Customer', () => this.stripe.customers.retrieve(customer)) : customer,
      this.call('read a PaymentMethod', () => this.stripe.paymentMethods.retrieve(methodId)),
    ])
    const accountId = 'deleted' in owner && owner.deleted ? null : (owner as Stripe.Customer).metadata?.berth_account ?? null
    return { type: 'payment_method.updated', customerRef: owner.id, accountId, paymentMethodId: method.id, methodLabel: this.label(method) }
  }

  /** "visa ending 4242", plus " (test)" in test mode, as the built-in processor writes it. */
  private label(method: Stripe.PaymentMethod | null): string {
    const card = method?.card
    const text = card ? `${card.brand} ending ${card.last4}` : (method?.type ?? 'payment method')
    return this.testMode ? `${text} (test)` : text
  }

  private notSucceeded(intent: Stripe.PaymentIntent): ChargeResult {
    this.deps.log.info('stripe payment not completed', { payment_intent: intent.id, status: intent.status })
    if (intent.status === 'requires_action') {
      return { ok: false, declineCode: 'authentication_required', message: 'The card asks for 3-D Secure authentication, which cannot be completed here; use another card.' }
    }
    const error = intent.last_payment_error
    const declineCode = error?.decline_code && error.decline_code !== 'generic_decline' ? error.decline_code : error?.code ?? intent.status
    return { ok: false, declineCode, message: error?.message ?? `The payment did not complete (Stripe status ${intent.status}).` }
  }

  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw this.failure(err, what)
    }
  }

  /**
   * Stripe unreachable, failing, refusing our key or rate-limiting: ProcessorUnavailableError
   * with what the hoster can do about it (the caller answers 503 and changes nothing). Anything
   * else (an invalid request: a bug of ours) is returned as it is.
   */
  private failure(err: unknown, what: string): Error {
    const e = Stripe.errors
    const request = err instanceof e.StripeError && err.requestId ? ` (Stripe request ${err.requestId})` : ''
    let message: string | null = null
    if (err instanceof e.StripeConnectionError) message = `Stripe cannot be reached to ${what}: ${err.message} Check this machine's outbound HTTPS to ${this.deps.apiBase || 'api.stripe.com'}${this.deps.apiBase ? ' (payments.stripe_api_base)' : ''}.`
    else if (err instanceof e.StripeAuthenticationError) message = `Stripe refused the secret key when trying to ${what}: check payments.stripe_secret_key (BERTH_PAYMENTS_STRIPE_SECRET_KEY); it must be a current sk_test_ or sk_live_ key from the Stripe Dashboard.`
    else if (err instanceof e.StripePermissionError) message = `The Stripe key may not ${what}${request}: use a secret key, or a restricted key with write access to Customers, PaymentIntents, Checkout Sessions, Refunds and the customer portal.`
    else if (err instanceof e.StripeRateLimitError) message = `Stripe is rate-limiting this account${request}; retry in a minute.`
    else if (err instanceof e.StripeAPIError) message = `Stripe failed to ${what} (HTTP ${err.statusCode ?? 'error'})${request}; see https://status.stripe.com and retry.`
    if (message === null) return err instanceof Error ? err : new Error(String(err))
    this.deps.log.warn('stripe unavailable', { action: what, error: message })
    return new ProcessorUnavailableError(message)
  }
}

/** stripe-node's host/port/protocol options for an `apiBase` origin; none for Stripe's own. */
function apiOrigin(apiBase: string | undefined): { host: string; port: string; protocol: 'http' | 'https' } | Record<string, never> {
  if (!apiBase) return {}
  const url = new URL(apiBase)
  const protocol = url.protocol === 'http:' ? 'http' : 'https'
  return { host: url.hostname, port: url.port || (protocol === 'http' ? '80' : '443'), protocol }
}

/**
 * Berth's decline code for a card error: Stripe's issuer reason (`insufficient_funds`...), or
 * its error code (`card_declined`, `expired_card`...) when the issuer gave only a generic one.
 */
function declineCodeOf(err: Stripe.errors.StripeCardError): string {
  return err.decline_code && err.decline_code !== 'generic_decline' ? err.decline_code : err.code ?? 'card_declined'
}

const idOf = (value: string | { id: string } | null | undefined): string | null => (typeof value === 'string' ? value : value?.id ?? null)
