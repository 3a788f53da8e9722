import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'

const h = inProcess()
afterAll(() => h.close())

let ipCounter = 0
/** Each checkout from its own address, so the 10/hour creation limit stays out of the way. */
const ip = () => `198.18.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`
const slug = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`

async function create(sku = 'svc_starter_monthly', key?: string) {
  const res = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku }, key, headers: { 'x-forwarded-for': ip() } })
  expect(res.status, res.text).toBe(201)
  return res.json.data as { id: string; checkout_secret: string; status: string }
}
const path = (id: string, secret: string, action = '') => `/api/v1/acp/checkouts/${id}/${action}${action ? '/' : ''}?checkout_secret=${secret}`
const poll = (id: string, secret: string) => h.call('GET', path(id, secret), { headers: { 'x-forwarded-for': ip() } })

async function ready(stem: string, key?: string) {
  const c = await create('svc_starter_monthly', key)
  const s = slug(stem)
  const res = await h.call('POST', path(c.id, c.checkout_secret, 'update'), { body: { requested_slug: s, buyer_email: 'Buyer@Example.com' } })
  expect(res.status).toBe(200)
  expect(res.json.data.status).toBe('ready')
  return { ...c, slug: s }
}

describe('checkout state machine', () => {
  it('creates a not_ready session with its secret shown once, amount and expiry', async () => {
    const c = await create('svc_business_annual')
    expect(c.status).toBe('not_ready')
    expect(c.checkout_secret).toMatch(/^cks_[0-9a-f]{48}$/)
    const got = await poll(c.id, c.checkout_secret)
    expect(got.json.data).toMatchObject({ sku: 'svc_business_annual', plan_slug: 'business', billing_period: 'annual', amount: 240, currency: 'CAD', test_mode: true })
    expect(got.json.data.checkout_secret).toBeUndefined()
    expect(Date.parse(got.json.data.expires_at) - Date.parse(got.json.data.created_at)).toBe(24 * 3600_000)
  })

  it('stays not_ready with only an email, becomes ready with a valid slug', async () => {
    const c = await create()
    const mail = await h.call('POST', path(c.id, c.checkout_secret, 'update'), { body: { buyer_email: 'a@example.com' } })
    expect(mail.json.data).toMatchObject({ status: 'not_ready', buyer_email: 'a@example.com' })
    const bad = await h.call('POST', path(c.id, c.checkout_secret, 'update'), { body: { requested_slug: 'Bad_Slug' } })
    expect(bad.status).toBe(422)
    expect(bad.json.error.param).toBe('requested_slug')
    const s = slug('ok')
    const good = await h.call('POST', path(c.id, c.checkout_secret, 'update'), { body: { requested_slug: s } })
    expect(good.json.data).toMatchObject({ status: 'ready', requested_slug: s })
  })

  it('completes only from ready (409 otherwise) and requires payment_method_id for direct payment', async () => {
    const c = await create()
    const early = await h.call('POST', path(c.id, c.checkout_secret, 'complete'), { body: {} })
    expect(early.status).toBe(409)
    const r = await ready('direct')
    const missing = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: { payment_method: 'processor_payment_method' } })
    expect(missing.status).toBe(422)
    expect(missing.json.error.param).toBe('payment_method_id')
    expect((await poll(r.id, r.checkout_secret)).json.data.status).toBe('ready')
  })

  it('a decline answers 402 and changes nothing; an unknown test id is a decline too', async () => {
    const r = await ready('declined')
    for (const pm of ['pm_card_chargeDeclinedInsufficientFunds', 'pm_card_bogus']) {
      const res = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: { payment_method: 'processor_payment_method', payment_method_id: pm } })
      expect(res.status).toBe(402)
      expect(res.json.error.code).toBe('PAYMENT_DECLINED')
    }
    expect((await poll(r.id, r.checkout_secret)).json.data.status).toBe('ready')
    const payments = h.services.store.sqlite.query('SELECT count(*) AS n FROM payments WHERE checkout_id = ?').get(r.id) as { n: number }
    expect(payments.n).toBe(0)
  })

  it('a direct payment records account, key, subscription, payment and site, and shows the key once', async () => {
    const r = await ready('paid')
    const res = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_mastercard' } })
    expect(res.status).toBe(201)
    const d = res.json.data
    expect(d).toMatchObject({ status: 'completed', site_slug: r.slug, payment_method: 'processor_payment_method' })
    expect(d.api_key).toMatch(/^svc_[0-9a-f]{48}$/)
    expect(d.site_url).toContain(`${r.slug}.localhost`)
    expect((await poll(r.id, r.checkout_secret)).json.data.api_key).toBeUndefined()
    const who = await h.call('GET', '/api/v1/auth/whoami/', { key: d.api_key })
    expect(who.json.data.user.email).toBe('buyer@example.com')
    expect(who.json.data.account).toEqual({ sites: 1, active_subscriptions: 1 })
    const payment = h.services.store.sqlite.query('SELECT * FROM payments WHERE checkout_id = ?').get(r.id) as Record<string, unknown>
    expect(payment).toMatchObject({ amount_cents: 700, status: 'succeeded', processor: 'local', test_mode: 1 })
    expect(String(payment.method_label)).toContain('4444')
    const again = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
    expect(again.status).toBe(409)
  })

  it('with a bearer key the site joins that account and no key is issued', async () => {
    const owner = await h.register('owner@example.com')
    const r = await ready('joined', owner.key)
    const res = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
    expect(res.status).toBe(201)
    expect(res.json.data.api_key).toBeUndefined()
    const sites = await h.call('GET', '/api/v1/sites/', { key: owner.key })
    expect(sites.json.data.map((s: { slug: string }) => s.slug)).toContain(r.slug)
  })

  it('an invalid bearer key on creation is refused rather than ignored', async () => {
    const res = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, key: `svc_${'a'.repeat(48)}`, headers: { 'x-forwarded-for': ip() } })
    expect(res.status).toBe(401)
  })

  it('hosted payment: awaiting_payment, in_progress while processing, then the key on exactly one poll', async () => {
    const r = await ready('hosted')
    const res = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: {} })
    expect(res.status).toBe(200)
    expect(res.json.data).toMatchObject({ status: 'awaiting_payment', payment_method: 'processor_checkout' })
    const ref = /\/pay\/(cs_test_[0-9a-f]+)\/$/.exec(res.json.data.processor_checkout_url)![1]
    const page = await h.call('GET', `/pay/${ref}/`)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toContain('text/html')
    expect(page.text).toContain('TEST MODE')
    const declined = await h.call('POST', `/pay/${ref}/confirm`, { body: { card_number: '4000 0000 0000 0002', exp_month: 12, exp_year: 34, cvc: '123' } })
    expect(declined.status).toBe(402)
    expect((await poll(r.id, r.checkout_secret)).json.data.status).toBe('awaiting_payment')
    const paid = await h.call('POST', `/pay/${ref}/confirm`, { body: { card_number: '4242424242424242', exp_month: 12, exp_year: 34, cvc: '123' } })
    expect(paid.status).toBe(200)
    const polls = await Promise.all([1, 2, 3, 4].map(() => poll(r.id, r.checkout_secret)))
    const keys = polls.map((p) => p.json.data.api_key).filter(Boolean)
    expect(keys).toHaveLength(1)
    expect(polls.every((p) => p.json.data.status === 'completed')).toBe(true)
    expect((await h.call('GET', '/api/v1/auth/whoami/', { key: keys[0] })).status).toBe(200)
  })

  it("the built-in page's Pay pressed three times at once pays once: one payment, one site, the key on one poll", async () => {
    const r = await ready('paytwice')
    const res = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: {} })
    const ref = /\/pay\/(cs_test_[0-9a-f]+)\/$/.exec(res.json.data.processor_checkout_url)![1]
    const card = { card_number: '4242424242424242', exp_month: 12, exp_year: 34, cvc: '123' }
    const paid = await Promise.all([1, 2, 3].map(() => h.call('POST', `/pay/${ref}/confirm`, { body: card })))
    expect(paid.map((p) => p.status)).toEqual([200, 200, 200])
    const rows = (sql: string) => h.services.store.sqlite.query(sql).all(r.id)
    expect(rows('SELECT status FROM payments WHERE checkout_id = ?')).toEqual([{ status: 'succeeded' }])
    expect(rows("SELECT s.slug FROM sites s JOIN checkout_sessions c ON c.site_id = s.id WHERE c.id = ?")).toEqual([{ slug: r.slug }])
    const keys = (await Promise.all([1, 2].map(() => poll(r.id, r.checkout_secret)))).map((p) => p.json.data.api_key).filter(Boolean)
    expect(keys).toHaveLength(1)
  })

  it('cancels from not_ready, ready or awaiting_payment, and not after completion', async () => {
    const a = await create()
    expect((await h.call('POST', path(a.id, a.checkout_secret, 'cancel'))).json.data.status).toBe('canceled')
    const r = await ready('cancel')
    expect((await h.call('POST', path(r.id, r.checkout_secret, 'cancel'))).json.data.status).toBe('canceled')
    // A canceled session frees its slug.
    const other = await create()
    expect((await h.call('POST', path(other.id, other.checkout_secret, 'update'), { body: { requested_slug: r.slug } })).status).toBe(200)
    expect((await h.call('POST', path(a.id, a.checkout_secret, 'cancel'))).status).toBe(409)
  })

  it('cancels an unpaid session 24 h after creation', async () => {
    const r = await ready('expiry')
    h.clock.advance(24 * 3600_000 + 1)
    const got = await poll(r.id, r.checkout_secret)
    expect(got.json.data.status).toBe('canceled')
    expect(got.json.data.error).toContain('Expired')
    expect((await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: {} })).status).toBe(409)
  })

  it('answers 404 for a wrong or missing secret, via query or header', async () => {
    const c = await create()
    for (const res of [
      await h.call('GET', `/api/v1/acp/checkouts/${c.id}/`),
      await h.call('GET', path(c.id, 'cks_nope')),
      await h.call('POST', `/api/v1/acp/checkouts/${c.id}/update/`, { body: { buyer_email: 'x@example.com' }, headers: { 'x-checkout-secret': 'wrong' } }),
      await h.call('GET', path(crypto.randomUUID(), c.checkout_secret)),
    ]) {
      expect(res.status).toBe(404)
      expect(res.json.error.code).toBe('NOT_FOUND')
    }
    expect((await h.call('GET', `/api/v1/acp/checkouts/${c.id}/`, { headers: { 'x-checkout-secret': c.checkout_secret } })).status).toBe(200)
  })

  it('limits polling to 60 a minute per address', async () => {
    const c = await create()
    for (let i = 0; i < 60; i++) expect((await h.call('GET', path(c.id, c.checkout_secret), { headers: { 'x-forwarded-for': '203.0.113.77' } })).status).toBe(200)
    const over = await h.call('GET', path(c.id, c.checkout_secret), { headers: { 'x-forwarded-for': '203.0.113.77' } })
    expect(over.status).toBe(429)
    expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(60)
  })
})

describe('sites/create', () => {
  it('refuses without an agency subscription with room (403), and adds a site with one', async () => {
    const owner = await h.register()
    const none = await h.call('POST', '/api/v1/sites/create/', { key: owner.key, body: { slug: slug('none') } })
    expect(none.status).toBe(403)
    const c = await create('svc_agency_monthly', owner.key)
    await h.call('POST', path(c.id, c.checkout_secret, 'update'), { body: { requested_slug: slug('agency') } })
    expect((await h.call('POST', path(c.id, c.checkout_secret, 'complete'), { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })).status).toBe(201)
    const second = slug('second')
    const res = await h.call('POST', '/api/v1/sites/create/', { key: owner.key, body: { slug: second } })
    expect(res.status).toBe(201)
    expect(res.json.data).toMatchObject({ slug: second, plan: 'agency', status: 'provisioning' })
    const taken = await h.call('POST', '/api/v1/sites/create/', { key: owner.key, body: { slug: second } })
    expect(taken.status).toBe(422)
    expect(taken.json.error.param).toBe('slug')
  })
})

describe('a direct payment interrupted by a stop', () => {
  /** What a process killed after the processor charged leaves behind: the payment pending, the charge in the ledger. */
  async function chargedThenStopped(r: { id: string }, method = 'pm_card_visa') {
    const charges = h.services.charges
    const payment = charges.open({ key: `checkout:${r.id}:${method}`, kind: 'purchase', accountId: null, checkoutId: r.id, amountCents: 700, paymentMethodId: method, description: 'Starter' })
    await charges.collect(payment, { reference: r.id })
    return payment
  }
  const ledger = (id: string) => (h.services.store.sqlite.query('SELECT count(*) AS n FROM local_charges WHERE idempotency_key LIKE ?').get(`checkout:${id}:%`) as { n: number }).n

  it('the start-up pass completes the session with that charge; the new key shows on the next poll, once', async () => {
    const r = await ready('resumed')
    const payment = await chargedThenStopped(r)
    await h.services.charges.resumePending(h.clock.now() + 1)
    const first = await poll(r.id, r.checkout_secret)
    expect(first.json.data).toMatchObject({ status: 'completed', site_slug: r.slug })
    expect(first.json.data.api_key).toMatch(/^svc_[0-9a-f]{48}$/)
    expect((await poll(r.id, r.checkout_secret)).json.data.api_key).toBeUndefined()
    expect(h.services.billing.findPaymentById(payment.id)).toMatchObject({ status: 'succeeded', kind: 'purchase' })
    expect(h.services.billing.findPaymentById(payment.id)!.accountId).not.toBeNull()
    expect(ledger(r.id)).toBe(1)
    await h.services.jobs.drain()
  })

  it('the buyer retrying with the same card before the pass gets the same charge, not a second one', async () => {
    const r = await ready('retried')
    await chargedThenStopped(r)
    const res = await h.call('POST', path(r.id, r.checkout_secret, 'complete'), { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
    expect(res.status, res.text).toBe(201)
    expect(res.json.data.api_key).toMatch(/^svc_/)
    expect(ledger(r.id)).toBe(1)
    await h.services.charges.resumePending(h.clock.now() + 1)
    const payments = h.services.store.sqlite.query('SELECT status FROM payments WHERE checkout_id = ?').all(r.id)
    expect(payments).toEqual([{ status: 'succeeded' }])
    await h.services.jobs.drain()
  })

  it('a session canceled meanwhile gets its charge refunded', async () => {
    const r = await ready('canceled')
    const payment = await chargedThenStopped(r)
    expect((await h.call('POST', path(r.id, r.checkout_secret, 'cancel'))).json.data.status).toBe('canceled')
    await h.services.charges.resumePending(h.clock.now() + 1)
    expect(h.services.billing.findPaymentById(payment.id)).toMatchObject({ status: 'refunded' })
    expect((await poll(r.id, r.checkout_secret)).json.data.status).toBe('canceled')
  })
})
