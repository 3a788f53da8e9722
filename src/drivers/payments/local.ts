import type { ChargeInput, ChargeResult, HostedCheckout, HostedCheckoutInput, PaymentProcessor, ProcessorEvent } from './types'

/** Test payment-method ids, named as Stripe's (design.md, Checkout). */
const TEST_METHODS: Record<string, ChargeResult | { ok: false; declineCode: string; message: string }> = {
  pm_card_visa: { ok: true, paymentRef: '', methodLabel: 'visa ending 4242 (test)' },
  pm_card_mastercard: { ok: true, paymentRef: '', methodLabel: 'mastercard ending 4444 (test)' },
  pm_card_visa_chargeDeclined: { ok: false, declineCode: 'card_declined', message: 'The card was declined.' },
  pm_card_chargeDeclinedInsufficientFunds: { ok: false, declineCode: 'insufficient_funds', message: 'The card has insufficient funds.' },
}

/** Test card numbers accepted by the hosted page. */
export const TEST_CARDS: Record<string, { ok: boolean; label: string; declineCode?: string }> = {
  '4242424242424242': { ok: true, label: 'visa ending 4242 (test)' },
  '5555555555554444': { ok: true, label: 'mastercard ending 4444 (test)' },
  '4000000000000002': { ok: false, label: 'visa ending 0002 (test)', declineCode: 'card_declined' },
  '4000000000009995': { ok: false, label: 'visa ending 9995 (test)', declineCode: 'insufficient_funds' },
}

export const LOCAL_PAYMENT_METHODS = Object.keys(TEST_METHODS)

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

  constructor(private siteUrl: string, private lookup: (sessionRef: string) => HostedSessionInfo | null, private now: () => number = Date.now) {}

  async createHostedCheckout(input: HostedCheckoutInput): Promise<HostedCheckout> {
    const sessionRef = `cs_test_${randomToken(24)}`
    return { sessionRef, url: `${this.siteUrl}/pay/${sessionRef}/` }
  }

  async charge(input: ChargeInput): Promise<ChargeResult> {
    const outcome = TEST_METHODS[input.paymentMethodId]
    if (!outcome) {
      return { ok: false, declineCode: 'invalid_payment_method', message: `Unknown test payment method '${input.paymentMethodId}'; in test mode use ${LOCAL_PAYMENT_METHODS.join(', ')}.` }
    }
    if (!outcome.ok) return outcome
    return { ok: true, paymentRef: `pi_test_${randomToken(24)}`, methodLabel: outcome.methodLabel }
  }

  async refund(input: { paymentRef: string }): Promise<{ refundRef: string }> {
    return { refundRef: `re_test_${input.paymentRef.slice(-24)}` }
  }

  async billingPortalUrl(input: { accountId: string; flow: string }): Promise<string> {
    return `${this.siteUrl}/billing/test-portal/?account=${encodeURIComponent(input.accountId)}${input.flow ? `&flow=${input.flow}` : ''}`
  }

  onEvent(listener: (event: ProcessorEvent) => Promise<void>): void {
    this.listeners.push(listener)
  }

  session(sessionRef: string): HostedSessionInfo | null {
    return /^cs_test_[0-9a-f]{48}$/.test(sessionRef) ? this.lookup(sessionRef) : null
  }

  /**
   * What the hosted page's Pay button calls. A good test card moves the session to processing,
   * then settles it (as a processor's webhooks would, in that order); a declining card changes
   * nothing, so the buyer can try another.
   */
  async submitCard(sessionRef: string, card: CardSubmission): Promise<CardResult> {
    const session = this.session(sessionRef)
    if (!session || session.state === 'closed') return { ok: false, field: 'session', message: 'This payment page has expired or was canceled.' }
    if (session.state !== 'open') return { ok: true }
    const number = card.number.replace(/[\s-]/g, '')
    const test = TEST_CARDS[number]
    if (!test) return { ok: false, field: 'number', message: 'Test mode: use 4242 4242 4242 4242 to pay or 4000 0000 0000 0002 to see a decline.' }
    const expiry = Date.UTC(card.expYear < 100 ? 2000 + card.expYear : card.expYear, card.expMonth, 1)
    if (!(card.expMonth >= 1 && card.expMonth <= 12) || expiry <= this.now()) return { ok: false, field: 'expiry', message: 'The expiry date is in the past.' }
    if (!/^\d{3,4}$/.test(card.cvc)) return { ok: false, field: 'cvc', message: 'The security code is 3 or 4 digits.' }
    if (!test.ok) return { ok: false, field: 'number', message: 'Your card was declined.', declined: true }
    await this.emit({ type: 'checkout.processing', sessionRef, reference: session.reference })
    await this.emit({ type: 'checkout.paid', sessionRef, reference: session.reference, paymentRef: `pi_test_${randomToken(24)}`, methodLabel: test.label, amountCents: session.amountCents })
    return { ok: true }
  }

  private async emit(event: ProcessorEvent) {
    for (const listener of this.listeners) await listener(event)
  }
}

const randomToken = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('hex')
