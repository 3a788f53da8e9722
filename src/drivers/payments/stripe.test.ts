import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { deliver, startFakeStripe, webhookDelivery, type FakeStripe } from '../../../test/fakes/stripe-server'
import { loadConfig } from '../../config/config'
import { BillingRepository } from '../../domain/billing/repository'
import { memoryLogger } from '../../lib/logger'
import { migrate } from '../../store/migrate'
import { openStore, type Store } from '../../store/store'
import { LocalProcessor } from './local'
import { selectProcessor, type ProcessorDeps } from './select'
import { StripeProcessor, type WebhookEventLedger } from './stripe'
import { ProcessorUnavailableError, type ChargeInput, type ProcessorEvent } from './types'

/**
 * The Stripe driver over real HTTP (loopback) against the FAKE Stripe in test/fakes: Stripe
 * cannot be reached from the machines the tests run on.
 */
const SECRET_KEY = 'sk_test_berth_unit'
const WEBHOOK_SECRET = 'whsec_berth_unit_secret'
const SITE = 'https://hosting.example.com'

/** The ledger src/compose/money.ts gives: Berth's store (SQLite, migrated) through the billing repository. */
class StoreLedger implements WebhookEventLedger {
  readonly store: Store = openStore(join(mkdtempSync(join(tmpdir(), 'berth-stripe-')), 'berth.db'))
  private repo = new BillingRepository(this.store)
  constructor() {
    migrate(this.store)
  }
  claim = (id: string) => this.repo.claimEvent(id, 'stripe', Date.now())
  settle = (id: string) => this.repo.settleEvent(id)
  release = (id: string) => this.repo.releaseEvent(id)
  /** The event's row: 'claimed' while acted on, 'webhook' once acted on, undefined when none. */
  state(id: string): string | undefined {
    return (this.store.sqlite.query('SELECT type FROM processor_events WHERE id = ?').get(id) as { type: string } | null)?.type
  }
}

let fake: FakeStripe
let processor: StripeProcessor
let ledger: StoreLedger
let received: ProcessorEvent[]
/** Set to make the next listener call fail (a database hiccup), as Berth's listener could. */
let failListener = false
/** How long the listener takes (Berth's fulfils a checkout meanwhile); reset before each test. */
let listenerDelayMs = 0
/** A stand-in for the webhook route: forwards the raw body and headers to the driver. */
let route: ReturnType<typeof Bun.serve>
let hookUrl: string

const log = memoryLogger()
const makeProcessor = (over: Partial<ConstructorParameters<typeof StripeProcessor>[0]> = {}) =>
  new StripeProcessor({ secretKey: SECRET_KEY, webhookSecret: WEBHOOK_SECRET, siteUrl: SITE, apiBase: fake.url, events: ledger, log, ...over })

beforeAll(async () => {
  fake = await startFakeStripe({ secretKey: SECRET_KEY })
  ledger = new StoreLedger()
  processor = makeProcessor()
  processor.onEvent(async (event) => {
    if (listenerDelayMs) await Bun.sleep(listenerDelayMs)
    if (failListener) {
      failListener = false
      throw new Error('database is locked')
    }
    received.push(event)
  })
  route = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: async (req) => {
      const outcome = await processor.webhook(await req.text(), req.headers)
      return new Response(outcome.message, { status: outcome.status })
    },
  })
  hookUrl = `http://127.0.0.1:${route.port}/webhooks/stripe/`
})
afterAll(async () => {
  await route.stop(true)
  await fake.stop()
  ledger.store.close()
})
beforeEach(() => {
  received = []
  listenerDelayMs = 0
  failListener = false
})

const charge = (over: Partial<ChargeInput> = {}): ChargeInput => ({
  reference: 'co_1', idempotencyKey: crypto.randomUUID(), amountCents: 2400, currency: 'cad', paymentMethodId: 'pm_card_visa',
  description: 'Business VPS, monthly', customerEmail: 'agent@example.com', ...over,
})
const lastRequest = (path: string) => fake.requests.filter((r) => r.path === path).at(-1)!

describe('the Stripe driver against a fake Stripe', () => {
  it('is in test mode with a test key only', () => {
    expect(processor.name).toBe('stripe')
    expect(processor.testMode).toBe(true)
    expect(makeProcessor({ secretKey: 'sk_live_abc' }).testMode).toBe(false)
  })

  it('creates a hosted Checkout Session: CAD, one line, the reference, the buyer, a saved card, the way back', async () => {
    const hosted = await processor.createHostedCheckout({ reference: 'co_hosted', amountCents: 2400, currency: 'cad', description: 'Business VPS, monthly', customerEmail: 'buyer@example.com', returnUrl: `${SITE}/done/` })
    expect(hosted.sessionRef).toMatch(/^cs_test_/)
    expect(hosted.url).toBe(`${fake.url}/c/pay/${hosted.sessionRef}`)
    expect(lastRequest('/v1/checkout/sessions').params).toEqual({
      mode: 'payment',
      line_items: [{ quantity: '1', price_data: { currency: 'cad', unit_amount: '2400', product_data: { name: 'Business VPS, monthly' } } }],
      client_reference_id: 'co_hosted',
      metadata: { reference: 'co_hosted' },
      customer_email: 'buyer@example.com',
      customer_creation: 'always',
      payment_intent_data: { setup_future_usage: 'off_session', metadata: { reference: 'co_hosted' } },
      success_url: `${SITE}/done/`,
      cancel_url: `${SITE}/done/`,
    })
    await processor.createHostedCheckout({ reference: 'co_hosted2', amountCents: 700, currency: 'CAD', description: 'Starter', customerEmail: null })
    const second = lastRequest('/v1/checkout/sessions').params
    expect(second).toMatchObject({ success_url: SITE, cancel_url: SITE })
    expect(second.customer_email).toBeUndefined()
  })

  it('pays directly, saving the card on a new customer, then charges it off-session', async () => {
    const before = fake.charges.length
    const first = await processor.charge(charge({ reference: 'co_direct' }))
    if (!first.ok) throw new Error(first.message)
    expect(first.paymentRef).toMatch(/^pi_/)
    expect(first.methodLabel).toBe('visa ending 4242 (test)')
    // The test token became a saved method of a new customer with the buyer's e-mail.
    expect(first.paymentMethodId).toMatch(/^pm_/)
    expect(first.paymentMethodId).not.toBe('pm_card_visa')
    expect(first.customerRef).toMatch(/^cus_/)
    expect(fake.customers.get(first.customerRef!)!.email).toBe('agent@example.com')
    expect(fake.paymentMethods.get(first.paymentMethodId)!.customer).toBe(first.customerRef)
    expect(lastRequest('/v1/payment_intents').params).toMatchObject({
      amount: '2400', currency: 'cad', customer: first.customerRef, payment_method: 'pm_card_visa', confirm: 'true',
      setup_future_usage: 'off_session', metadata: { reference: 'co_direct' },
    })

    const renewal = await processor.charge(charge({ reference: 'renewal:sub_1', paymentMethodId: first.paymentMethodId, customerRef: first.customerRef, customerEmail: null, offSession: true }))
    expect(renewal).toMatchObject({ ok: true, paymentMethodId: first.paymentMethodId, customerRef: first.customerRef, methodLabel: 'visa ending 4242 (test)' })
    const sent = lastRequest('/v1/payment_intents').params
    expect(sent).toMatchObject({ off_session: 'true', customer: first.customerRef })
    expect(sent.setup_future_usage).toBeUndefined()
    expect(fake.charges.slice(before).map((c) => [c.amount, c.offSession, c.reference])).toEqual([[2400, false, 'co_direct'], [2400, true, 'renewal:sub_1']])
  })

  it('answers a decline as { ok: false } with its code, and moves no money', async () => {
    const before = fake.charges.length
    expect(await processor.charge(charge({ paymentMethodId: 'pm_card_visa_chargeDeclined' }))).toEqual({ ok: false, declineCode: 'card_declined', message: 'Your card was declined.' })
    expect(await processor.charge(charge({ paymentMethodId: 'pm_card_chargeDeclinedInsufficientFunds' }))).toEqual({ ok: false, declineCode: 'insufficient_funds', message: 'Your card has insufficient funds.' })
    // A PaymentIntent left waiting for 3-D Secure is not a payment.
    expect(await processor.charge(charge({ paymentMethodId: 'pm_card_authenticationRequired' }))).toMatchObject({ ok: false, declineCode: 'authentication_required' })
    const unknown = await processor.charge(charge({ paymentMethodId: 'pm_nonexistent' }))
    expect(unknown).toMatchObject({ ok: false, declineCode: 'invalid_payment_method' })
    expect(unknown.ok === false && unknown.message).toMatch(/pm_nonexistent.*pm_card_visa/)
    expect(fake.charges.length).toBe(before)
  })

  it('charges once for one idempotency key, even when asked twice', async () => {
    const before = { charges: fake.charges.length, customers: fake.customers.size }
    const input = charge({ reference: 'renewal:sub_twice', idempotencyKey: 'renewal:sub_twice:2026-02' })
    const first = await processor.charge(input)
    const second = await processor.charge(input)
    expect(first.ok).toBe(true)
    expect(second).toEqual(first)
    expect(fake.charges.length - before.charges).toBe(1)
    expect(fake.customers.size - before.customers).toBe(1)
    const replays = fake.requests.filter((r) => r.idempotencyKey?.startsWith('renewal:sub_twice:2026-02'))
    expect(replays.map((r) => [r.path, r.replayed])).toEqual([
      ['/v1/customers', false], ['/v1/payment_intents', false], ['/v1/customers', true], ['/v1/payment_intents', true],
    ])
    // A declined attempt replays as declined: still no charge.
    const declined = charge({ paymentMethodId: 'pm_card_visa_chargeDeclined', idempotencyKey: 'declined-once' })
    expect((await processor.charge(declined)).ok).toBe(false)
    expect((await processor.charge(declined)).ok).toBe(false)
    expect(fake.charges.length - before.charges).toBe(1)
  })

  it('refunds a payment once, and returns the same refund when asked again (also after Stripe forgot the key)', async () => {
    const paid = await processor.charge(charge({ reference: 'co_refund', amountCents: 8900 }))
    if (!paid.ok) throw new Error(paid.message)
    const { refundRef } = await processor.refund({ paymentRef: paid.paymentRef, amountCents: 8900, reason: 'provisioning failed' })
    expect(refundRef).toMatch(/^re_/)
    expect(fake.refunds.get(refundRef)).toMatchObject({ payment_intent: paid.paymentRef, amount: 8900, metadata: { reason: 'provisioning failed' } })
    expect(lastRequest('/v1/refunds').idempotencyKey).toBe(`refund:${paid.paymentRef}`)
    expect(await processor.refund({ paymentRef: paid.paymentRef, amountCents: 8900, reason: 'provisioning failed' })).toEqual({ refundRef })
    fake.expireIdempotencyKeys()
    expect(await processor.refund({ paymentRef: paid.paymentRef, amountCents: 8900, reason: 'provisioning failed' })).toEqual({ refundRef })
    expect([...fake.refunds.values()].filter((r) => r.payment_intent === paid.paymentRef)).toHaveLength(1)
  })

  it('opens a billing-portal session for the customer, on the card form when asked', async () => {
    const paid = await processor.charge(charge({ reference: 'co_portal' }))
    if (!paid.ok) throw new Error(paid.message)
    const start = Date.now()
    const portal = await processor.billingPortal({ accountId: 'acc_1', customerRef: paid.customerRef, returnUrl: `${SITE}/account/`, flow: 'payment_method_update' })
    expect(portal.url).toMatch(new RegExp(`^${fake.url}/p/session/bps_`))
    expect(portal.expiresAt - start).toBeGreaterThanOrEqual(5 * 60_000)
    expect(portal.expiresAt - Date.now()).toBeLessThanOrEqual(5 * 60_000)
    expect(lastRequest('/v1/billing_portal/sessions').params).toEqual({ customer: paid.customerRef, return_url: `${SITE}/account/`, flow_data: { type: 'payment_method_update' } })
    await processor.billingPortal({ accountId: 'acc_1', customerRef: paid.customerRef, returnUrl: `${SITE}/account/`, flow: '' })
    expect(lastRequest('/v1/billing_portal/sessions').params.flow_data).toBeUndefined()
  })

  it('gives an account without a Stripe customer one tagged with the account, the same on every click', async () => {
    const before = fake.customers.size
    await processor.billingPortal({ accountId: 'acc_new', customerRef: null, returnUrl: SITE, flow: '' })
    await processor.billingPortal({ accountId: 'acc_new', customerRef: null, returnUrl: SITE, flow: '' })
    expect(fake.customers.size - before).toBe(1)
    const customer = [...fake.customers.values()].at(-1)!
    expect(customer.metadata).toEqual({ berth_account: 'acc_new' })
    expect(lastRequest('/v1/billing_portal/sessions').params.customer).toBe(customer.id)
  })

  it('throws ProcessorUnavailableError when Stripe is down, failing or refuses the key, and charges nothing', async () => {
    const gone = await startFakeStripe({ secretKey: SECRET_KEY })
    const unreachable = makeProcessor({ apiBase: gone.url })
    await gone.stop()
    // stripe-node retries twice with back-off first: the calls run side by side.
    const failures = await Promise.all([
      unreachable.charge(charge()),
      unreachable.createHostedCheckout({ reference: 'x', amountCents: 700, currency: 'cad', description: 'Starter', customerEmail: null }),
      unreachable.billingPortal({ accountId: 'a', customerRef: 'cus_x', returnUrl: SITE, flow: '' }),
      unreachable.refund({ paymentRef: 'pi_x', amountCents: 1, reason: 'x' }),
    ].map((p) => p.then(() => null, (e: unknown) => e)))
    for (const failure of failures) expect(failure).toBeInstanceOf(ProcessorUnavailableError)
    expect((failures[0] as Error).message).toMatch(/cannot be reached to charge a payment method.*payments\.stripe_api_base/)

    const before = fake.charges.length
    fake.breakWith(500)
    try {
      const failing = await processor.charge(charge()).catch((e: unknown) => e)
      expect(failing).toBeInstanceOf(ProcessorUnavailableError)
      expect((failing as Error).message).toMatch(/Stripe failed to .*HTTP 500/)
    } finally {
      fake.breakWith(null)
    }
    const wrongKey = await makeProcessor({ secretKey: 'sk_test_revoked' }).charge(charge()).catch((e: unknown) => e)
    expect(wrongKey).toBeInstanceOf(ProcessorUnavailableError)
    expect((wrongKey as Error).message).toMatch(/payments\.stripe_secret_key/)
    expect(fake.charges.length).toBe(before)
  })
})

describe('Stripe webhooks', () => {
  /** A hosted checkout paid on (fake) Stripe's page: the event Stripe would send. */
  async function paidCheckout(reference: string, opts: { delayed?: boolean } = {}) {
    const hosted = await processor.createHostedCheckout({ reference, amountCents: 2400, currency: 'cad', description: 'Business VPS, monthly', customerEmail: 'buyer@example.com' })
    return { hosted, event: fake.completeCheckout(hosted.sessionRef, opts) }
  }

  it('acts on a validly signed payment exactly once; forged, stale, unsigned and replayed deliveries do nothing', async () => {
    const { hosted, event } = await paidCheckout('co_hook')
    const now = Math.floor(Date.now() / 1000)

    const forged = await deliver(hookUrl, event, { secret: 'whsec_someone_else' })
    expect(forged.status).toBe(400)
    const stale = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET, timestamp: now - 301 })
    expect(stale.status).toBe(400)
    expect(await stale.text()).toMatch(/tolerance/)
    const unsigned = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET, signature: '' })
    expect(unsigned.status).toBe(400)
    // A body changed after signing (same signature header, other amount).
    const signed = await webhookDelivery(event, { secret: WEBHOOK_SECRET })
    const tampered = await processor.webhook(signed.body.replace('"amount_total": 2400', '"amount_total": 1'), signed.headers)
    expect(tampered.status).toBe(400)
    expect(received).toEqual([])

    const ok = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET })
    expect(ok.status).toBe(200)
    const session = fake.checkoutSessions.get(hosted.sessionRef)!
    const intent = fake.paymentIntents.get(session.payment_intent as string)!
    expect(received).toEqual([{
      type: 'checkout.paid', sessionRef: hosted.sessionRef, reference: 'co_hook', paymentRef: intent.id, methodLabel: 'visa ending 4242 (test)',
      amountCents: 2400, paymentMethodId: intent.payment_method, customerRef: session.customer,
    }])
    expect(fake.customers.get(session.customer as string)!.email).toBe('buyer@example.com')

    // Stripe delivers again (freshly signed): answered, not acted on.
    const replay = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET, timestamp: now + 5 })
    expect(replay.status).toBe(200)
    expect(await replay.text()).toBe('duplicate')
    expect(received).toHaveLength(1)
  })

  it('answers 500 when a listener fails, without recording the event, so the redelivery is acted on', async () => {
    const { event } = await paidCheckout('co_retry')
    failListener = true
    const failed = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET })
    expect(failed.status).toBe(500)
    expect(ledger.state(event.id)).toBeUndefined()
    const again = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET })
    expect(again.status).toBe(200)
    expect(received.map((e) => e.type)).toEqual(['checkout.paid'])
    expect(ledger.state(event.id)).toBe('webhook')
  })

  it('acts once on an event delivered several times at the same moment; the others answer duplicate', async () => {
    const { event } = await paidCheckout('co_twice')
    // The listener takes a while (as Berth's does, fulfilling a checkout): the deliveries overlap.
    listenerDelayMs = 50
    const answers = await Promise.all([1, 2, 3].map(async () => {
      const res = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET })
      return `${res.status} ${await res.text()}`
    }))
    expect(answers.sort()).toEqual(['200 checkout.paid', '200 duplicate', '200 duplicate'])
    expect(received.map((e) => e.type)).toEqual(['checkout.paid'])
    expect(ledger.state(event.id)).toBe('webhook')
  })

  it('releases the claim of a failed delivery while a duplicate came meanwhile: the retry is acted on', async () => {
    const { event } = await paidCheckout('co_fail_twice')
    failListener = true
    listenerDelayMs = 50
    const [first, second] = await Promise.all([deliver(hookUrl, event, { secret: WEBHOOK_SECRET }), deliver(hookUrl, event, { secret: WEBHOOK_SECRET })])
    expect([first.status, second.status].sort()).toEqual([200, 500])
    expect(received).toEqual([])
    expect(ledger.state(event.id)).toBeUndefined()
    const retry = await deliver(hookUrl, event, { secret: WEBHOOK_SECRET })
    expect(retry.status).toBe(200)
    expect(await retry.text()).toBe('checkout.paid')
    expect(received.map((e) => e.type)).toEqual(['checkout.paid'])
  })

  it("a claim left by a stopped process (never settled) is released at start, not one settled or made since", () => {
    const repo = new BillingRepository(ledger.store)
    const start = Date.now()
    expect(repo.claimEvent('evt_stopped_mid_way', 'stripe', start - 60_000)).toBe(true)
    expect(repo.claimEvent('evt_done', 'stripe', start - 60_000)).toBe(true)
    repo.settleEvent('evt_done')
    expect(repo.claimEvent('evt_in_flight', 'stripe', start)).toBe(true)
    expect(repo.releaseStaleClaims(start)).toBe(1)
    expect([ledger.state('evt_stopped_mid_way'), ledger.state('evt_done'), ledger.state('evt_in_flight')]).toEqual([undefined, 'webhook', 'claimed'])
    expect(repo.claimEvent('evt_stopped_mid_way', 'stripe', start)).toBe(true)
  })

  it('maps a delayed payment to processing then paid, and failures and expiries to expired', async () => {
    const { hosted, event } = await paidCheckout('co_delayed', { delayed: true })
    expect((await deliver(hookUrl, event, { secret: WEBHOOK_SECRET })).status).toBe(200)
    expect((await deliver(hookUrl, fake.settleCheckout(hosted.sessionRef, true), { secret: WEBHOOK_SECRET })).status).toBe(200)
    expect(received.map((e) => [e.type, 'reference' in e && e.reference])).toEqual([['checkout.processing', 'co_delayed'], ['checkout.paid', 'co_delayed']])

    received = []
    const failing = await paidCheckout('co_bank_failed', { delayed: true })
    await deliver(hookUrl, failing.event, { secret: WEBHOOK_SECRET })
    await deliver(hookUrl, fake.settleCheckout(failing.hosted.sessionRef, false), { secret: WEBHOOK_SECRET })
    const abandoned = await processor.createHostedCheckout({ reference: 'co_abandoned', amountCents: 700, currency: 'cad', description: 'Starter', customerEmail: null })
    await deliver(hookUrl, fake.expireCheckout(abandoned.sessionRef), { secret: WEBHOOK_SECRET })
    expect(received).toEqual([
      { type: 'checkout.processing', sessionRef: failing.hosted.sessionRef, reference: 'co_bank_failed' },
      { type: 'checkout.expired', sessionRef: failing.hosted.sessionRef, reference: 'co_bank_failed' },
      { type: 'checkout.expired', sessionRef: abandoned.sessionRef, reference: 'co_abandoned' },
    ])
  })

  it('turns a card replaced in the billing portal into payment_method.updated naming the account', async () => {
    await processor.billingPortal({ accountId: 'acc_portal', customerRef: null, returnUrl: SITE, flow: 'payment_method_update' })
    const customer = lastRequest('/v1/billing_portal/sessions').params.customer as string
    const { setupIntentSucceeded, customerUpdated } = fake.replaceDefaultMethod(customer, 'pm_card_mastercard')
    expect((await deliver(hookUrl, setupIntentSucceeded, { secret: WEBHOOK_SECRET })).status).toBe(200)
    expect((await deliver(hookUrl, customerUpdated, { secret: WEBHOOK_SECRET })).status).toBe(200)
    const method = (fake.customers.get(customer)!.invoice_settings as { default_payment_method: string }).default_payment_method
    const expected = { type: 'payment_method.updated', customerRef: customer, accountId: 'acc_portal', paymentMethodId: method, methodLabel: 'mastercard ending 4444 (test)' }
    expect(received).toEqual([expected, expected])
  })

  it('ignores events Berth does not use, and customer updates that leave the card alone', async () => {
    const other = await deliver(hookUrl, fake.event('invoice.paid', { id: 'in_1', object: 'invoice' }), { secret: WEBHOOK_SECRET })
    expect([other.status, await other.text()]).toEqual([200, 'ignored'])
    const customer = [...fake.customers.values()][0]!
    const renamed = await deliver(hookUrl, fake.event('customer.updated', { ...customer, name: 'New name' }, { name: null }), { secret: WEBHOOK_SECRET })
    expect([renamed.status, await renamed.text()]).toEqual([200, 'ignored'])
    expect(received).toEqual([])
  })
})

describe('selectProcessor', () => {
  const deps: ProcessorDeps = {
    local: { lookup: () => null, ledger: { find: () => null, record: () => {} }, portal: { url: () => ({ url: `${SITE}/billing/`, expiresAt: 0 }) } },
    stripeEvents: { claim: () => true, settle: () => {}, release: () => {} }, clock: { now: () => Date.now() }, log,
  }

  it('builds the built-in processor by default and Stripe when configured', async () => {
    const local = selectProcessor(loadConfig({ file: null, env: { BERTH_SERVER_SITE_URL: SITE } }), deps)
    expect(local).toBeInstanceOf(LocalProcessor)
    expect((await local.createHostedCheckout({ reference: 'co_local', amountCents: 700, currency: 'cad', description: 'Starter', customerEmail: null })).url).toMatch(new RegExp(`^${SITE}/pay/cs_test_`))
    const config = loadConfig({ file: null, env: { BERTH_PAYMENTS_PROCESSOR: 'stripe', BERTH_PAYMENTS_STRIPE_SECRET_KEY: 'sk_live_abc123', BERTH_PAYMENTS_STRIPE_WEBHOOK_SECRET: 'whsec_abc' } })
    const stripe = selectProcessor(config, deps)
    expect(stripe).toBeInstanceOf(StripeProcessor)
    expect([stripe.name, stripe.testMode]).toEqual(['stripe', false])
  })

  it('talks to the API base the config names', async () => {
    const config = loadConfig({ file: null, env: { BERTH_PAYMENTS_PROCESSOR: 'stripe', BERTH_PAYMENTS_STRIPE_SECRET_KEY: SECRET_KEY, BERTH_PAYMENTS_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, BERTH_PAYMENTS_STRIPE_API_BASE: `${fake.url}/` } })
    const result = await selectProcessor(config, deps).charge(charge({ reference: 'co_selected' }))
    expect(result.ok).toBe(true)
    expect(fake.charges.at(-1)!.reference).toBe('co_selected')
  })
})
