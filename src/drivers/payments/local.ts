import { renderPaymentPage } from './local-page'
import { renderPortal, renderPortalGone, renderReceipt } from './local-portal'
import type {
  BillingPortalInput, CardResult, CardSubmission, ChargeInput, ChargeResult, HostedCheckout, HostedCheckoutInput, HostedSessionInfo, PaymentProcessor,
  ProcessorEvent, ProcessorPages, TestPaymentMethod,
} from './types'

export type { CardResult, CardSubmission, HostedSessionInfo } from './types'

type TestMethod = { ok: true; label: string } | { ok: false; label: string; declineCode: string; message: string }

/** Test payment-method ids, named as Stripe's (design.md, Checkout): one entry for each of TEST_PAYMENT_METHODS. */
const TEST_METHODS: Record<string, TestMethod> = {
  pm_card_visa: { ok: true, label: 'visa ending 4242 (test)' },
  pm_card_mastercard: { ok: true, label: 'mastercard ending 4444 (test)' },
  pm_card_visa_chargeDeclined: { ok: false, label: 'visa ending 0002 (test)', declineCode: 'card_declined', message: 'The card was declined.' },
  pm_card_chargeDeclinedInsufficientFunds: { ok: false, label: 'visa ending 9995 (test)', declineCode: 'insufficient_funds', message: 'The card has insufficient funds.' },
} satisfies Record<TestPaymentMethod, TestMethod>

/** Test card numbers accepted by the hosted page and the billing portal, and the method each one is. */
export const TEST_CARDS: Record<string, { ok: boolean; label: string; declineCode?: string; methodId: string }> = {
  '4242424242424242': { ok: true, label: 'visa ending 4242 (test)', methodId: 'pm_card_visa' },
  '5555555555554444': { ok: true, label: 'mastercard ending 4444 (test)', methodId: 'pm_card_mastercard' },
  '4000000000000002': { ok: false, label: 'visa ending 0002 (test)', declineCode: 'card_declined', methodId: 'pm_card_visa_chargeDeclined' },
  '4000000000009995': { ok: false, label: 'visa ending 9995 (test)', declineCode: 'insufficient_funds', methodId: 'pm_card_chargeDeclinedInsufficientFunds' },
}

/**
 * The built-in processor's memory of what it charged, by idempotency key (Berth backs it with
 * the store): a charge repeated with a key it has seen returns the first outcome, as Stripe does.
 */
export interface LocalLedger {
  find(idempotencyKey: string): ChargeResult | null
  record(idempotencyKey: string, input: ChargeInput, result: ChargeResult): void
}

/** Signs the built-in billing portal's links (Berth's own page, valid one hour). */
export interface PortalLinks {
  url(accountId: string, flow: '' | 'payment_method_update'): { url: string; expiresAt: number }
}

export const LOCAL_PAYMENT_METHODS = Object.keys(TEST_METHODS)

/**
 * The built-in processor: test mode only, no money moves. Its hosted page is served by Berth at
 * `{site_url}/pay/{sessionRef}/`; submitting a test card there emits the same events a Stripe
 * webhook would. Sessions live in Berth's store (looked up through `lookup`), so a restart loses
 * nothing.
 */
export class LocalProcessor implements PaymentProcessor {
  readonly name = 'local'
  readonly testMode = true
  private listeners: ((event: ProcessorEvent) => Promise<void>)[] = []
  /** Its hosted payment page and billing portal, served by Berth at /pay/ and /billing/portal/. */
  readonly pages: ProcessorPages = {
    session: (sessionRef) => this.session(sessionRef),
    submitCard: (sessionRef, card) => this.submitCard(sessionRef, card),
    methodForCard: (card) => this.methodForCard(card),
    paymentPage: renderPaymentPage,
    portal: renderPortal,
    portalGone: renderPortalGone,
    receipt: renderReceipt,
  }

  constructor(private o: {
    siteUrl: string
    lookup: (sessionRef: string) => HostedSessionInfo | null
    ledger: LocalLedger
    portal: PortalLinks
    now?: () => number
    /** dev.payment_delay_ms: each charge waits this long before and after it is recorded, so a test can kill Berth in the middle of one. */
    delayMs?: number
  }) {}

  private now(): number {
    return this.o.now?.() ?? Date.now()
  }

  async createHostedCheckout(input: HostedCheckoutInput): Promise<HostedCheckout> {
    const sessionRef = `cs_test_${randomToken(24)}`
    return { sessionRef, url: `${this.o.siteUrl}/pay/${sessionRef}/` }
  }

  async charge(input: ChargeInput): Promise<ChargeResult> {
    const earlier = this.o.ledger.find(input.idempotencyKey)
    if (earlier) return earlier
    // dev.payment_delay_ms: a pause before the charge is recorded and one after, so a test can
    // kill Berth on either side of it.
    if (this.o.delayMs) await Bun.sleep(this.o.delayMs)
    const result = this.outcome(input)
    this.o.ledger.record(input.idempotencyKey, input, result)
    if (this.o.delayMs) await Bun.sleep(this.o.delayMs)
    return result
  }

  private outcome(input: ChargeInput): ChargeResult {
    const method = TEST_METHODS[input.paymentMethodId]
    if (!method) {
      return { ok: false, declineCode: 'invalid_payment_method', message: `Unknown test payment method '${input.paymentMethodId}'; in test mode use ${LOCAL_PAYMENT_METHODS.join(', ')}.` }
    }
    if (!method.ok) return { ok: false, declineCode: method.declineCode, message: method.message }
    return { ok: true, paymentRef: `pi_test_${randomToken(24)}`, methodLabel: method.label, paymentMethodId: input.paymentMethodId, customerRef: null }
  }

  async refund(input: { paymentRef: string }): Promise<{ refundRef: string }> {
    return { refundRef: `re_test_${input.paymentRef.slice(-24)}` }
  }

  async billingPortal(input: BillingPortalInput): Promise<{ url: string; expiresAt: number }> {
    return this.o.portal.url(input.accountId, input.flow)
  }

  /** The test method a card number stands for on the portal's card form, or why it is refused. */
  methodForCard(card: CardSubmission): { ok: true; methodId: string; label: string } | { ok: false; field: 'number' | 'expiry' | 'cvc'; message: string } {
    const number = card.number.replace(/[\s-]/g, '')
    const test = TEST_CARDS[number]
    if (!test) return { ok: false, field: 'number', message: 'Test mode: use 4242 4242 4242 4242 (pays) or 4000 0000 0000 0002 (declines).' }
    const expiry = Date.UTC(card.expYear < 100 ? 2000 + card.expYear : card.expYear, card.expMonth, 1)
    if (!(card.expMonth >= 1 && card.expMonth <= 12) || expiry <= this.now()) return { ok: false, field: 'expiry', message: 'The expiry date is in the past.' }
    if (!/^\d{3,4}$/.test(card.cvc)) return { ok: false, field: 'cvc', message: 'The security code is 3 or 4 digits.' }
    return { ok: true, methodId: test.methodId, label: test.label }
  }

  onEvent(listener: (event: ProcessorEvent) => Promise<void>): void {
    this.listeners.push(listener)
  }

  session(sessionRef: string): HostedSessionInfo | null {
    return /^cs_test_[0-9a-f]{48}$/.test(sessionRef) ? this.o.lookup(sessionRef) : null
  }

  /**
   * What the hosted page's Pay button calls. A good test card moves the session to processing,
   * then settles it (as a processor's webhooks would, in that order); a declining card changes
   * nothing, so the buyer can try another.
   */
  async submitCard(sessionRef: string, submitted: CardSubmission): Promise<CardResult> {
    const session = this.session(sessionRef)
    if (!session || session.state === 'closed') return { ok: false, field: 'session', message: 'This payment page has expired or was canceled.' }
    if (session.state !== 'open') return { ok: true }
    const card = this.methodForCard(submitted)
    if (!card.ok) return card
    const test = TEST_CARDS[submitted.number.replace(/[\s-]/g, '')]!
    if (!test.ok) return { ok: false, field: 'number', message: 'Your card was declined.', declined: true }
    await this.emit({ type: 'checkout.processing', sessionRef, reference: session.reference })
    await this.emit({ type: 'checkout.paid', sessionRef, reference: session.reference, paymentRef: `pi_test_${randomToken(24)}`, methodLabel: test.label, amountCents: session.amountCents, paymentMethodId: test.methodId, customerRef: null })
    return { ok: true }
  }

  /** Tells the listeners (Berth) that an account's card on file changed (the built-in portal's card form). */
  async paymentMethodUpdated(accountId: string, methodId: string, label: string): Promise<void> {
    await this.emit({ type: 'payment_method.updated', accountId, customerRef: null, paymentMethodId: methodId, methodLabel: label })
  }

  private async emit(event: ProcessorEvent) {
    for (const listener of this.listeners) await listener(event)
  }
}

const randomToken = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('hex')
