import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deliver, startFakeStripe, type FakeStripe } from './fakes/stripe-server'
import { api, startBerth, type Berth } from './helpers/binary'
import { readyCheckout, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The compiled binary with `payments.processor = "stripe"`, pointed at the FAKE Stripe in
 * test/fakes (Stripe cannot be reached from here): direct payments and declines on the real
 * driver, the hosted page paid at the fake and its signed webhook delivered to
 * `{site_url}/webhooks/stripe/` (once acted on, twice a duplicate, forged or stale refused), the
 * billing portal, a card replaced at Stripe, and the webhook endpoint's hygiene. Sites are real
 * containers, removed at the end.
 */
const WEBHOOK_SECRET = 'whsec_berth_e2e_fake_stripe'
const SKU = 'svc_starter_monthly'

let fake: FakeStripe
let berth: Berth
let hook = ''

const stripeEnv = (f: FakeStripe, extra: Record<string, string> = {}) => ({
  BERTH_PAYMENTS_PROCESSOR: 'stripe',
  BERTH_PAYMENTS_STRIPE_SECRET_KEY: f.secretKey,
  BERTH_PAYMENTS_STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
  BERTH_PAYMENTS_STRIPE_API_BASE: f.url,
  BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour',
  ...extra,
})

beforeAll(async () => {
  fake = await startFakeStripe()
  berth = await startBerth({ env: stripeEnv(fake) })
  instanceOf(berth)
  hook = `${berth.url}/webhooks/stripe/`
}, 60_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  await fake?.stop()
})

/** Rows of Berth's database (read-only, beside the running binary: WAL). */
function query<T>(sql: string, ...params: string[]): T[] {
  const db = new Database(join(berth.dataDir, 'berth.db'), { readonly: true })
  try {
    return db.query(sql).all(...params) as T[]
  } finally {
    db.close()
  }
}
const paymentsOfCheckout = (checkoutId: string) => query<{ processor: string; processor_ref: string; amount_cents: number; status: string }>(
  'SELECT processor, processor_ref, amount_cents, status FROM payments WHERE checkout_id = ?', checkoutId,
)

const getCheckout = (id: string, secret: string) => api(berth.url, 'GET', `/acp/checkouts/${id}/`, { headers: { 'x-checkout-secret': secret } })
const completeDirect = (id: string, secret: string, paymentMethodId: string) =>
  api(berth.url, 'POST', `/acp/checkouts/${id}/complete/`, { body: { payment_method: 'processor_payment_method', payment_method_id: paymentMethodId }, headers: { 'x-checkout-secret': secret } })

/** A ready checkout sent to the hosted page: the fake's Checkout Session id and URL. */
async function hostedCheckout(slug: string) {
  const { id, secret } = await readyCheckout(berth.url, { slug, sku: SKU, email: `${slug}@example.com` })
  const done = await api(berth.url, 'POST', `/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_checkout' } })
  expect(done.status, done.text).toBe(200)
  expect(done.json.data.status).toBe('awaiting_payment')
  const url = done.json.data.processor_checkout_url as string
  expect(url.startsWith(`${fake.url}/c/pay/cs_test_`), url).toBe(true)
  return { id, secret, url, session: url.split('/').pop()! }
}

/** The buyer of the direct purchase: later tests use its account and Stripe customer. */
let direct: { key: string; slug: string; customer: string } | undefined

describe('Berth on Stripe (fake)', () => {
  it('GET /status/ names the stripe processor, in test mode with an sk_test_ key (and not with sk_live_)', async () => {
    const res = await api(berth.url, 'GET', '/status/')
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ status: 'ok', payment_processor: 'stripe', test_mode: true })

    const liveFake = await startFakeStripe({ secretKey: 'sk_live_fake_berth' })
    const live = await startBerth({ env: stripeEnv(liveFake) })
    instanceOf(live)
    try {
      const status = await api(live.url, 'GET', '/status/')
      expect(status.json.data).toMatchObject({ payment_processor: 'stripe', test_mode: false })
    } finally {
      await live.dispose()
      await removeInstanceSites(live)
      await liveFake.stop()
    }
  })

  it('direct payment with pm_card_visa: 201 completed, one charge in CAD cents at Stripe, the card on file, the site active', async () => {
    const slug = uniqueSlug('stripe-direct')
    const { id, secret } = await readyCheckout(berth.url, { slug, sku: SKU })
    const chargesBefore = fake.charges.length
    const done = await completeDirect(id, secret, 'pm_card_visa')
    expect(done.status, done.text).toBe(201)
    expect(done.json.data).toMatchObject({ status: 'completed', site_slug: slug, test_mode: true, payment_method: 'processor_payment_method' })
    expect(done.json.data.api_key).toMatch(/^svc_[0-9a-f]{48}$/)
    const key = done.json.data.api_key as string

    // Exactly one PaymentIntent moved money: the plan's price in cents, in CAD, for this checkout.
    const plan = (await api(berth.url, 'GET', '/plans/')).json.data.find((p: { skus: { monthly: string } }) => p.skus.monthly === SKU)
    const cents = Math.round(plan.price.monthly * 100)
    expect(Math.round(done.json.data.amount * 100)).toBe(cents)
    const charges = fake.charges.slice(chargesBefore)
    expect(charges).toHaveLength(1)
    expect(charges[0]).toMatchObject({ amount: cents, currency: 'cad', reference: id, via: 'api', offSession: false })
    const charge = charges[0]!
    expect(charge.customer).toMatch(/^cus_/)
    // Saved on the customer for renewals (setup_future_usage).
    expect(fake.paymentMethods.get(charge.paymentMethod)?.customer).toBe(charge.customer)
    // Berth's record of it names Stripe's PaymentIntent.
    expect(paymentsOfCheckout(id)).toEqual([{ processor: 'stripe', processor_ref: charge.paymentIntent, amount_cents: cents, status: 'succeeded' }])

    const subs = await api(berth.url, 'GET', '/account/subscriptions/', { key })
    expect(subs.status, subs.text).toBe(200)
    expect(subs.json.data).toHaveLength(1)
    expect(subs.json.data[0]).toMatchObject({ status: 'active', payment_method: { label: 'visa ending 4242 (test)' }, sites: [slug] })

    expect(await waitForSite(berth.url, key, slug)).toBe('active')
    direct = { key, slug, customer: charge.customer! }
  }, 120_000)

  it('a declined card (pm_card_visa_chargeDeclined): 402 PAYMENT_DECLINED, the session still ready, nothing charged', async () => {
    const slug = uniqueSlug('stripe-decline')
    const { id, secret } = await readyCheckout(berth.url, { slug, sku: SKU })
    const chargesBefore = fake.charges.length
    const res = await completeDirect(id, secret, 'pm_card_visa_chargeDeclined')
    expect(res.status, res.text).toBe(402)
    expect(res.json.error.code).toBe('PAYMENT_DECLINED')
    expect(res.json.error.message).toMatch(/declined/i)
    expect(fake.charges.length).toBe(chargesBefore)
    // Stripe was asked (and refused): the decline is the driver's, not a short cut.
    expect(fake.requests.some((r) => r.method === 'POST' && r.path === '/v1/payment_intents' && r.params.payment_method === 'pm_card_visa_chargeDeclined')).toBe(true)
    const after = await getCheckout(id, secret)
    expect(after.json.data.status).toBe('ready')
    expect(paymentsOfCheckout(id)).toEqual([])
  })

  it('hosted checkout: awaiting_payment with the fake\'s URL; paid at Stripe, the signed webhook completes it and the site is made; a redelivery is a duplicate that changes nothing', async () => {
    const slug = uniqueSlug('stripe-hosted')
    const { id, secret, session } = await hostedCheckout(slug)
    const stripeSession = fake.checkoutSessions.get(session)!
    expect(stripeSession).toMatchObject({ mode: 'payment', currency: 'cad', client_reference_id: id, customer_email: `${slug}@example.com`, status: 'open' })
    expect(stripeSession.amount_total).toBe(Math.round((await getCheckout(id, secret)).json.data.amount * 100))

    // The buyer pays on Stripe's page; until the webhook arrives, Berth still waits.
    const event = fake.completeCheckout(session)
    expect((await getCheckout(id, secret)).json.data.status).toBe('awaiting_payment')

    const delivered = await deliver(hook, event, { secret: WEBHOOK_SECRET })
    expect(delivered.status, berth.output()).toBe(200)
    expect((await delivered.text()).trim()).toBe('checkout.paid')

    // The first poll carries the new account's key, once.
    const first = await getCheckout(id, secret)
    expect(first.json.data).toMatchObject({ status: 'completed', site_slug: slug })
    const key = first.json.data.api_key as string
    expect(key).toMatch(/^svc_[0-9a-f]{48}$/)
    expect((await getCheckout(id, secret)).json.data.api_key).toBeUndefined()
    expect(await waitForSite(berth.url, key, slug)).toBe('active')

    const pi = stripeSession.payment_intent as string
    expect(paymentsOfCheckout(id)).toEqual([{ processor: 'stripe', processor_ref: pi, amount_cents: stripeSession.amount_total, status: 'succeeded' }])
    const subs = await api(berth.url, 'GET', '/account/subscriptions/', { key })
    expect(subs.json.data).toHaveLength(1)
    expect(subs.json.data[0].payment_method).toEqual({ label: 'visa ending 4242 (test)' })

    // Stripe delivers the same event again: answered duplicate, nothing asked of Stripe, nothing made.
    const requestsBefore = fake.requests.length
    const again = await deliver(hook, event, { secret: WEBHOOK_SECRET })
    expect(again.status).toBe(200)
    expect((await again.text()).trim()).toBe('duplicate')
    expect(fake.requests.length).toBe(requestsBefore)
    expect(paymentsOfCheckout(id)).toHaveLength(1)
    expect((await api(berth.url, 'GET', '/sites/', { key })).json.data.map((s: { slug: string }) => s.slug)).toEqual([slug])
    expect((await api(berth.url, 'GET', '/account/subscriptions/', { key })).json.data).toHaveLength(1)
    expect((await getCheckout(id, secret)).json.data.status).toBe('completed')
  }, 120_000)

  it('the same event delivered three times at the same moment is acted on once: one answer checkout.paid, the others duplicate, one look-up at Stripe, one payment, one site', async () => {
    const slug = uniqueSlug('stripe-twice')
    const { id, secret, session } = await hostedCheckout(slug)
    const event = fake.completeCheckout(session)
    const requestsBefore = fake.requests.length
    const answers = await Promise.all([1, 2, 3].map(async () => {
      const res = await deliver(hook, event, { secret: WEBHOOK_SECRET })
      return `${res.status} ${(await res.text()).trim()}`
    }))
    expect(answers.sort(), berth.output()).toEqual(['200 checkout.paid', '200 duplicate', '200 duplicate'])
    // Only the delivery that claimed the event asked Stripe for its PaymentIntent.
    const lookUps = fake.requests.slice(requestsBefore).filter((r) => r.method === 'GET' && r.path.startsWith('/v1/payment_intents/'))
    expect(lookUps).toHaveLength(1)
    expect(paymentsOfCheckout(id)).toHaveLength(1)
    const done = await getCheckout(id, secret)
    expect(done.json.data).toMatchObject({ status: 'completed', site_slug: slug })
    const key = done.json.data.api_key as string
    expect((await api(berth.url, 'GET', '/sites/', { key })).json.data.map((s: { slug: string }) => s.slug)).toEqual([slug])
    expect((await api(berth.url, 'GET', '/account/subscriptions/', { key })).json.data).toHaveLength(1)
    expect(query('SELECT type FROM processor_events WHERE id = ?', event.id)).toEqual([{ type: 'webhook' }])
    expect(await waitForSite(berth.url, key, slug)).toBe('active')
  }, 120_000)

  it('a delivery whose handling fails (Stripe down for the look-up) answers 500 and releases the event: the retry is acted on', async () => {
    const slug = uniqueSlug('stripe-retry')
    const { id, secret, session } = await hostedCheckout(slug)
    const event = fake.completeCheckout(session)
    fake.breakWith(500)
    let failed: Response
    try {
      failed = await deliver(hook, event, { secret: WEBHOOK_SECRET })
    } finally {
      fake.breakWith(null)
    }
    expect(failed.status, berth.output()).toBe(500)
    expect(query('SELECT id FROM processor_events WHERE id = ?', event.id)).toEqual([])
    expect((await getCheckout(id, secret)).json.data.status).toBe('awaiting_payment')
    const retried = await deliver(hook, event, { secret: WEBHOOK_SECRET })
    expect(retried.status, berth.output()).toBe(200)
    expect((await retried.text()).trim()).toBe('checkout.paid')
    const done = await getCheckout(id, secret)
    expect(done.json.data.status).toBe('completed')
    expect(paymentsOfCheckout(id)).toHaveLength(1)
    expect(await waitForSite(berth.url, done.json.data.api_key, slug)).toBe('active')
  }, 120_000)

  it('webhook signatures: forged, missing and stale (301 s) deliveries get 400 and change nothing; the same event signed now is then acted on', async () => {
    const slug = uniqueSlug('stripe-forged')
    const { id, secret, session } = await hostedCheckout(slug)
    const event = fake.completeCheckout(session)
    const requestsBefore = fake.requests.length

    const forged = await deliver(hook, event, { secret: 'whsec_not_this_endpoints_secret' })
    expect(forged.status).toBe(400)
    expect(await forged.text()).toMatch(/signature/i)
    const garbage = await deliver(hook, event, { secret: WEBHOOK_SECRET, signature: `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` })
    expect(garbage.status).toBe(400)
    const unsigned = await deliver(hook, event, { secret: WEBHOOK_SECRET, signature: '' })
    expect(unsigned.status).toBe(400)
    const stale = await deliver(hook, event, { secret: WEBHOOK_SECRET, timestamp: Math.floor(Date.now() / 1000) - 301 })
    expect(stale.status).toBe(400)
    expect(await stale.text()).toMatch(/tolerance|timestamp/i)

    // Nothing happened: Stripe was not asked, the session still waits, no payment or event recorded.
    expect(fake.requests.length).toBe(requestsBefore)
    expect((await getCheckout(id, secret)).json.data.status).toBe('awaiting_payment')
    expect(paymentsOfCheckout(id)).toEqual([])
    expect(query('SELECT id FROM processor_events WHERE id = ?', event.id)).toEqual([])

    // The refused deliveries did not use the event up: Stripe's retry, correctly signed, completes it.
    const retried = await deliver(hook, event, { secret: WEBHOOK_SECRET })
    expect(retried.status, berth.output()).toBe(200)
    const done = await getCheckout(id, secret)
    expect(done.json.data.status).toBe('completed')
    expect(await waitForSite(berth.url, done.json.data.api_key, slug)).toBe('active')
  }, 120_000)

  it('billing portal: flow=payment_method_update answers a Stripe portal session URL for the account\'s customer, with flow_data sent', async () => {
    expect(direct, 'the direct purchase above made the account').toBeDefined()
    const before = fake.requests.length
    const res = await api(berth.url, 'GET', '/account/billing-portal/?flow=payment_method_update', { key: direct!.key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ processor: 'stripe', test_mode: true, flow: 'payment_method_update' })
    expect(res.json.data.url).toMatch(new RegExp(`^${fake.url.replace(/[.]/g, '\\.')}/p/session/bps_[0-9a-f]+$`))
    const expiresIn = Date.parse(res.json.data.expires_at) - Date.now()
    expect(expiresIn).toBeGreaterThan(0)
    expect(expiresIn).toBeLessThanOrEqual(5 * 60_000)

    const made = fake.requests.slice(before).filter((r) => r.method === 'POST')
    // The account already has a Stripe customer: no new one, one portal session for it.
    expect(made.map((r) => r.path)).toEqual(['/v1/billing_portal/sessions'])
    expect(made[0]!.params).toMatchObject({ customer: direct!.customer, flow_data: { type: 'payment_method_update' }, return_url: `${berth.url}/for-agents` })
  })

  it('a card replaced at Stripe (billing portal, webhooks delivered): the account\'s card on file changes', async () => {
    expect(direct, 'the direct purchase above made the account').toBeDefined()
    const { setupIntentSucceeded, customerUpdated } = fake.replaceDefaultMethod(direct!.customer, 'pm_card_mastercard')
    const newMethod = (setupIntentSucceeded.data.object as { payment_method: string }).payment_method

    const first = await deliver(hook, setupIntentSucceeded, { secret: WEBHOOK_SECRET })
    expect(first.status, berth.output()).toBe(200)
    expect((await first.text()).trim()).toBe('payment_method.updated')
    const subs = await api(berth.url, 'GET', '/account/subscriptions/', { key: direct!.key })
    expect(subs.json.data[0].payment_method).toEqual({ label: 'mastercard ending 4444 (test)' })
    // Renewals will charge the new method, on the same customer.
    expect(query('SELECT payment_method_id, processor_customer_ref FROM accounts WHERE processor_customer_ref = ?', direct!.customer))
      .toEqual([{ payment_method_id: newMethod, processor_customer_ref: direct!.customer }])

    // Stripe's second event for the same change (the customer's new default) agrees.
    const second = await deliver(hook, customerUpdated, { secret: WEBHOOK_SECRET })
    expect(second.status).toBe(200)
    expect((await second.text()).trim()).toBe('payment_method.updated')
    const after = await api(berth.url, 'GET', '/account/subscriptions/', { key: direct!.key })
    expect(after.json.data[0].payment_method).toEqual({ label: 'mastercard ending 4444 (test)' })
    expect(after.json.data[0].status).toBe('active')
  })

  it('an account that never paid through Stripe: the portal makes its customer (metadata berth_account), and a card added there goes on file', async () => {
    const reg = await api(berth.url, 'POST', '/auth/register/', { body: { name: 'portal-only', email: 'portal-only@example.com' } })
    expect(reg.status, reg.text).toBe(201)
    const { api_key: key, account_id: accountId } = reg.json.data
    const before = fake.requests.length
    const portal = await api(berth.url, 'GET', '/account/billing-portal/', { key })
    expect(portal.status, portal.text).toBe(200)
    expect(portal.json.data).toMatchObject({ processor: 'stripe', flow: '' })
    const made = fake.requests.slice(before).filter((r) => r.method === 'POST')
    expect(made.map((r) => r.path)).toEqual(['/v1/customers', '/v1/billing_portal/sessions'])
    expect(made[1]!.params.flow_data).toBeUndefined()
    const customer = [...fake.customers.values()].find((c) => (c.metadata as Record<string, string>).berth_account === accountId)
    expect(customer, 'a Stripe customer tagged with the account').toBeDefined()
    expect(made[1]!.params.customer).toBe(customer!.id)

    const { setupIntentSucceeded } = fake.replaceDefaultMethod(customer!.id as string, 'pm_card_visa')
    const res = await deliver(hook, setupIntentSucceeded, { secret: WEBHOOK_SECRET })
    expect(res.status, berth.output()).toBe(200)
    const account = await api(berth.url, 'POST', '/account/update/', { key, body: { language: 'en' } })
    expect(account.json.data.payment_method).toEqual({ label: 'visa ending 4242 (test)' })
    expect(query('SELECT processor_customer_ref FROM accounts WHERE id = ?', accountId)).toEqual([{ processor_customer_ref: customer!.id }])
  })

  it('webhook endpoint hygiene: GET 405, a body over 1 MiB 413, another processor\'s path 404', async () => {
    const get = await fetch(hook)
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST')

    const big = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, body: 'x'.repeat(1024 * 1024 + 1) })
    expect(big.status).toBe(413)

    const paypal = await fetch(`${berth.url}/webhooks/paypal/`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(paypal.status).toBe(404)

    // A signed event Berth does not use: 200, ignored.
    const other = await deliver(hook, fake.event('invoice.paid', { id: 'in_fake', object: 'invoice' }), { secret: WEBHOOK_SECRET })
    expect(other.status).toBe(200)
    expect((await other.text()).trim()).toBe('ignored')

    // Still answering after all that.
    expect((await api(berth.url, 'GET', '/status/')).status).toBe(200)
  })
})
