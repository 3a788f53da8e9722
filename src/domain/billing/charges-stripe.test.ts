import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Stripe from 'stripe'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeStripe, type FakeStripe } from '../../../test/fakes/stripe-server'
import { StripeProcessor } from '../../drivers/payments/stripe'
import { ManualClock } from '../../lib/clock'
import { memoryLogger } from '../../lib/logger'
import { migrate } from '../../store/migrate'
import { openStore } from '../../store/store'
import { AccountsRepository } from '../accounts/repository'
import { Charges, type ChargeRequest } from './charges'
import { BillingRepository } from './repository'

/**
 * A payment left pending by a stop and finished by the start-up pass more than a day later, on
 * the Stripe driver over HTTP against the FAKE Stripe (test/fakes; Stripe cannot be reached from
 * here), which forgets idempotency keys 24 hours after their first use as Stripe does, on the
 * same clock as Berth. The charges service and its store are real (SQLite, migrated).
 */
const HOUR = 3_600_000
const SECRET_KEY = 'sk_test_berth_resume'
const dir = mkdtempSync(join(tmpdir(), 'charges-stripe-'))
const clock = new ManualClock()
let fake: FakeStripe

beforeAll(async () => {
  fake = await startFakeStripe({ secretKey: SECRET_KEY, clock })
})
afterAll(async () => {
  await fake.stop()
  rmSync(dir, { recursive: true, force: true })
})

function setup() {
  const store = openStore(join(dir, `${crypto.randomUUID()}.db`))
  migrate(store)
  const log = memoryLogger()
  const repo = new BillingRepository(store)
  const processor = new StripeProcessor({
    secretKey: SECRET_KEY, webhookSecret: 'whsec_unused', siteUrl: 'https://hosting.example.com', apiBase: fake.url, clock, log,
    events: { claim: () => true, settle: () => {}, release: () => {} },
  })
  const accountId = new AccountsRepository(store).insert({ id: crypto.randomUUID(), email: 'ada@example.com', name: 'Agent Key', createdAt: clock.now() }).id
  const charges = () => new Charges({ store, clock, log, repo, processor })
  const subscription = crypto.randomUUID()
  const key = `renewal:${subscription}:1769904000000:0`
  const reference = `renewal:${subscription}`
  const request = (over: Partial<ChargeRequest> = {}): ChargeRequest => ({
    key, kind: 'renewal', accountId, amountCents: 2400, description: 'Business VPS, monthly', paymentMethodId: 'pm_card_visa', ...over,
  })
  /** A restarted Berth's start-up pass, its resumer settling what the processor answers. */
  async function resumeAfterRestart() {
    const restarted = charges()
    restarted.onPending('renewal', async (p) => void restarted.settle(p.id, await restarted.collect(p, { reference, customerEmail: 'ada@example.com' })))
    await restarted.resumePending(clock.now())
  }
  const chargesOfKey = () => fake.charges.filter((c) => c.reference === reference)
  const intentsOfKey = () => [...fake.paymentIntents.values()].filter((pi) => (pi.metadata as Record<string, string>).reference === reference)
  const requestsSince = (n: number) => fake.requests.slice(n).map((r) => `${r.method} ${r.path}`)
  return { store, log, repo, charges: charges(), key, reference, request, resumeAfterRestart, chargesOfKey, intentsOfKey, requestsSince }
}

describe('a pending Stripe payment resumed after Stripe forgot its idempotency key', () => {
  it('charged before the stop, resumed 25 h later: found at Stripe by its key and not charged again', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    const first = await t.charges.collect(payment, { reference: t.reference, customerEmail: 'ada@example.com' })
    if (!first.ok) throw new Error(first.message)
    // Berth stopped here, before writing the outcome; it starts again 25 hours later.
    clock.advance(25 * HOUR)
    await t.resumeAfterRestart()
    expect(t.chargesOfKey()).toHaveLength(1)
    expect(t.repo.findPaymentById(payment.id)).toMatchObject({ status: 'succeeded', processorRef: first.paymentRef, methodLabel: 'visa ending 4242 (test)' })
    expect(t.log.lines.some((l) => l.msg === 'stripe payment found by its key after Stripe forgot the key; not charged again')).toBe(true)
  })

  it('declined before the stop, resumed 25 h later: declined as it was, with no second attempt at Stripe', async () => {
    const t = setup()
    const payment = t.charges.open(t.request({ paymentMethodId: 'pm_card_chargeDeclinedInsufficientFunds' }))
    expect(await t.charges.collect(payment, { reference: t.reference, customerEmail: 'ada@example.com' })).toMatchObject({ ok: false, declineCode: 'insufficient_funds' })
    clock.advance(25 * HOUR)
    await t.resumeAfterRestart()
    expect(t.intentsOfKey()).toHaveLength(1)
    expect(t.repo.findPaymentById(payment.id)).toMatchObject({ status: 'failed', failureCode: 'insufficient_funds' })
  })

  it('never reached Stripe before the stop, resumed 25 h later: charged once', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    clock.advance(25 * HOUR)
    const before = fake.requests.length
    await t.resumeAfterRestart()
    expect(t.requestsSince(before)).toEqual(['GET /v1/payment_intents/search', 'POST /v1/customers', 'POST /v1/payment_intents'])
    expect(t.chargesOfKey()).toHaveLength(1)
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('succeeded')
  })

  it('resumed within the day: Stripe replays its answer to the key, and nothing is looked up', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    const first = await t.charges.collect(payment, { reference: t.reference, customerEmail: 'ada@example.com' })
    clock.advance(22 * HOUR)
    const before = fake.requests.length
    await t.resumeAfterRestart()
    expect(fake.requests.slice(before).map((r) => [r.path, r.replayed])).toEqual([['/v1/customers', true], ['/v1/payment_intents', true]])
    expect(t.chargesOfKey()).toHaveLength(1)
    expect(t.repo.findPaymentById(payment.id)).toMatchObject({ status: 'succeeded', processorRef: first.ok && first.paymentRef })
  })

  it('first sent by a Berth before berth_key, resumed by this one: the earlier request replays, charged once', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    // The request as the driver sent it before it wrote `berth_key`, with the payment's key.
    const stripe = new Stripe(SECRET_KEY, { httpClient: Stripe.createFetchHttpClient(), host: '127.0.0.1', port: new URL(fake.url).port, protocol: 'http' })
    const customer = await stripe.customers.create({ email: 'ada@example.com', metadata: { reference: t.reference } }, { idempotencyKey: `${t.key}:customer` })
    const earlier = await stripe.paymentIntents.create({
      amount: 2400, currency: 'cad', customer: customer.id, payment_method: 'pm_card_visa', automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      confirm: true, description: 'Business VPS, monthly', metadata: { reference: t.reference }, setup_future_usage: 'off_session', expand: ['payment_method'],
    }, { idempotencyKey: t.key })
    clock.advance(HOUR)
    const charged = fake.charges.length
    await t.resumeAfterRestart()
    expect(fake.charges.length).toBe(charged)
    expect(t.repo.findPaymentById(payment.id)).toMatchObject({ status: 'succeeded', processorRef: earlier.id })
  })
})
