import { describe, expect, it } from 'vitest'
import { domainStore, testProcessor } from '../../../test/helpers/domain-store'
import { Charges } from '../billing/charges'
import { BillingRepository } from '../billing/repository'
import { DomainError } from '../errors'
import { KeysRepository } from '../keys/repository'
import { KeysService, type Principal } from '../keys/service'
import { PERIOD_MS } from '../../core/money'
import { SitesRepository } from '../sites/repository'
import { CheckoutRepository } from './repository'
import { CheckoutService } from './service'

/**
 * ACP checkout sessions on a real SQLite store with the built-in test processor: SKUs and their
 * prices, the secret guarding every door, the state table (not_ready, ready, awaiting_payment,
 * in_progress, completed, canceled), direct and hosted payments, declines, idempotent
 * completion and the 24-hour expiry. The sites service is a double that keeps slugs and records
 * the reservations made and released.
 */
const HOUR = 3600_000
function setup() {
  const t = domainStore()
  const pay = testProcessor(t)
  const billing = new BillingRepository(t.store)
  const repo = new CheckoutRepository(t.store)
  const keys = new KeysService(new KeysRepository(t.store), t.store, t.clock, 'berth')
  const siteRows = new SitesRepository(t.store)
  const taken = new Set(['taken'])
  const prepared: string[] = []
  const released: string[] = []
  const sites = {
    slugUnavailable: (slug: string) => (taken.has(slug) ? `Slug '${slug}' is taken; choose another.` : undefined),
    prepare: (_id: string, slug: string, _plan: string) => void prepared.push(slug),
    release: (slug: string) => void released.push(slug),
    createRecord: (input: { id?: string | null; accountId: string; subscriptionId: string | null; slug: string; planSlug: string }) =>
      siteRows.insert({ ...input, id: input.id ?? crypto.randomUUID(), createdAt: t.clock.now() }),
    siteUrl: (slug: string) => `https://${slug}.sites.test/`,
  }
  let kicks = 0
  const charges = new Charges({ store: t.store, clock: t.clock, log: t.log, repo: billing, processor: pay.processor })
  const checkout = new CheckoutService({
    store: t.store, clock: t.clock, log: t.log, prefix: 'berth', repo, plans: t.plans, money: { processor: pay.processor, charges, billing }, buyers: { accounts: t.accounts, keys },
    sites, jobs: { kick: () => void kicks++ },
  })
  /** A session with its slug chosen: ready to pay. */
  function ready(slug = `s${Math.random().toString(36).slice(2, 8)}`, sku = 'berth_starter_monthly', principal: Principal | null = null) {
    const created = checkout.create({ sku }, principal)
    checkout.update(created.id, created.checkout_secret!, { requested_slug: slug, buyer_email: 'Ada@Example.com' })
    return { id: created.id, secret: created.checkout_secret!, slug }
  }
  const payments = (checkoutId: string) => t.store.sqlite.query('SELECT status, amount_cents AS amount, kind FROM payments WHERE checkout_id = ?').all(checkoutId)
  const count = (table: string) => (t.store.sqlite.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n
  return { ...t, ...pay, billing, repo, keys, charges, checkout, prepared, released, kicks: () => kicks, ready, payments, count }
}

/** The domain error `fn` throws, as its kind and field. */
async function refusal(fn: () => unknown): Promise<{ kind: string; field: string | null }> {
  try {
    await fn()
  } catch (err) {
    if (!(err instanceof DomainError)) throw err
    return { kind: err.kind, field: err.field }
  }
  throw new Error('not refused')
}

const direct = { payment_method: 'processor_payment_method' as const, payment_method_id: 'pm_card_visa' }

describe('creating and preparing a session', () => {
  it('prices a SKU from its plan and period, expires in 24 hours, and shows the secret once', () => {
    const t = setup()
    const monthly = t.checkout.create({ sku: 'berth_business_monthly' }, null)
    expect(monthly).toMatchObject({ plan_slug: 'business', billing_period: 'monthly', amount: 24, currency: 'CAD', status: 'not_ready', test_mode: true })
    expect(monthly.checkout_secret).toMatch(/^cks_[0-9a-f]{48}$/)
    expect(Date.parse(monthly.expires_at) - Date.parse(monthly.created_at)).toBe(24 * HOUR)
    expect(t.checkout.create({ sku: 'berth_business_annual' }, null)).toMatchObject({ billing_period: 'annual', amount: 240 })
    expect(t.checkout.get(monthly.id, monthly.checkout_secret)).not.toHaveProperty('checkout_secret')
  })

  it('refuses a SKU of another brand or form, an unknown plan and a deprecated one, on sku', async () => {
    const t = setup()
    for (const sku of ['acme_starter_monthly', 'berth_starter_weekly', 'berth_platinum_monthly', 'berth_legacy-basic_monthly', 'starter']) {
      expect(await refusal(() => t.checkout.create({ sku }, null)), sku).toEqual({ kind: 'invalid', field: 'sku' })
    }
    expect(t.count('checkout_sessions')).toBe(0)
  })

  it('answers a wrong or missing secret exactly as an unknown session, on every door', async () => {
    const t = setup()
    const s = t.ready()
    const other = t.ready()
    const notFound = { kind: 'not_found', field: 'checkout_id' }
    for (const secret of [undefined, '', other.secret, `${s.secret}x`]) {
      expect(await refusal(() => t.checkout.get(s.id, secret))).toEqual(notFound)
      expect(await refusal(() => t.checkout.update(s.id, secret, { buyer_email: 'x@example.com' }))).toEqual(notFound)
      expect(await refusal(() => t.checkout.complete(s.id, secret, direct))).toEqual(notFound)
      expect(await refusal(() => t.checkout.cancel(s.id, secret))).toEqual(notFound)
    }
    expect(await refusal(() => t.checkout.get(crypto.randomUUID(), s.secret))).toEqual(notFound)
    expect(t.checkout.get(s.id, s.secret).status).toBe('ready')
  })

  it('becomes ready with a free slug (reserving its site), lower-cases the email, and refuses a taken slug on requested_slug', async () => {
    const t = setup()
    const created = t.checkout.create({ sku: 'berth_starter_monthly' }, null)
    expect(await refusal(() => t.checkout.update(created.id, created.checkout_secret, { requested_slug: 'taken' }))).toEqual({ kind: 'invalid', field: 'requested_slug' })
    expect(t.checkout.update(created.id, created.checkout_secret, { buyer_email: 'Ada@Example.COM' })).toMatchObject({ status: 'not_ready', buyer_email: 'ada@example.com' })
    expect(t.checkout.update(created.id, created.checkout_secret, { requested_slug: 'mine' })).toMatchObject({ status: 'ready', requested_slug: 'mine' })
    expect(t.prepared).toEqual(['mine'])
    expect(await refusal(() => t.checkout.update(created.id, created.checkout_secret, { requested_slug: 'other' }))).toEqual({ kind: 'conflict', field: 'status' })
    expect(await refusal(() => t.checkout.complete(t.checkout.create({ sku: 'berth_starter_monthly' }, null).id, undefined, direct))).toMatchObject({ kind: 'not_found' })
  })
})

describe('paying directly', () => {
  it('charges the card once and makes, together, the account, its key (shown once), subscription, payment and site', async () => {
    const t = setup()
    const s = t.ready('shop')
    const done = await t.checkout.complete(s.id, s.secret, direct)
    expect(done).toMatchObject({ status: 'completed', site_slug: 'shop', site_url: 'https://shop.sites.test/', payment_method: 'processor_payment_method' })
    expect(t.charged).toMatchObject([{ amountCents: 700, idempotencyKey: `checkout:${s.id}:pm_card_visa`, paymentMethodId: 'pm_card_visa' }])
    const principal = t.keys.authenticate(done.api_key!)
    expect(principal.scopes).toEqual(['read', 'write', 'admin'])
    expect(t.accounts.find(principal.accountId)).toMatchObject({ email: 'ada@example.com', paymentMethodId: 'pm_card_visa', paymentMethodLabel: 'visa ending 4242 (test)' })
    const [sub] = t.billing.subscriptionsOf(principal.accountId)
    expect(sub).toMatchObject({ id: done.subscription_id, planSlug: 'starter', status: 'active', amountCents: 700, currentPeriodEnd: t.clock.now() + PERIOD_MS.monthly })
    expect(t.payments(s.id)).toEqual([{ status: 'succeeded', amount: 700, kind: 'purchase' }])
    expect(t.kicks()).toBe(1)
    // The key was shown once: a poll does not show it again, and completing again is refused.
    expect(t.checkout.get(s.id, s.secret)).not.toHaveProperty('api_key')
    expect(await refusal(() => t.checkout.complete(s.id, s.secret, direct))).toEqual({ kind: 'conflict', field: 'status' })
    expect(t.charged).toHaveLength(1)
  })

  it('two cards sent at once: one pays for the session, the other is refunded; one subscription', async () => {
    const t = setup()
    const s = t.ready()
    const [a, b] = await Promise.all([t.checkout.complete(s.id, s.secret, direct), t.checkout.complete(s.id, s.secret, { ...direct, payment_method_id: 'pm_card_mastercard' })])
    expect([a.status, b.status]).toEqual(['completed', 'completed'])
    expect(t.count('subscriptions')).toBe(1)
    expect(t.payments(s.id)).toEqual(expect.arrayContaining([{ status: 'succeeded', amount: 700, kind: 'purchase' }, { status: 'refunded', amount: 700, kind: 'purchase' }]))
    expect(t.refunded).toHaveLength(1)
  })

  it('a signed-in buyer’s purchase goes to their account and shows no new key', async () => {
    const t = setup()
    const accountId = t.account(null, 'bob@example.com')
    const s = t.ready('bobs', 'berth_agency_annual', { accountId, email: 'bob@example.com' } as Principal)
    const done = await t.checkout.complete(s.id, s.secret, direct)
    expect(done.api_key).toBeUndefined()
    expect(t.billing.subscriptionsOf(accountId)).toMatchObject([{ planSlug: 'agency', billingPeriod: 'annual', amountCents: 39000 }])
    expect(t.count('accounts')).toBe(1)
  })

  it('a declined card leaves the session ready with no payment kept; another card then pays', async () => {
    const t = setup()
    const s = t.ready()
    expect(await refusal(() => t.checkout.complete(s.id, s.secret, { ...direct, payment_method_id: 'pm_card_visa_chargeDeclined' }))).toEqual({ kind: 'payment_declined', field: 'payment_method_id' })
    expect(t.checkout.get(s.id, s.secret).status).toBe('ready')
    expect(t.payments(s.id)).toEqual([])
    expect((await t.checkout.complete(s.id, s.secret, direct)).status).toBe('completed')
    expect(t.payments(s.id)).toEqual([{ status: 'succeeded', amount: 700, kind: 'purchase' }])
  })

  it('needs payment_method_id with a direct payment; an unreachable processor is 503 with the session unchanged, and the retry charges once', async () => {
    const t = setup()
    const s = t.ready()
    expect(await refusal(() => t.checkout.complete(s.id, s.secret, { payment_method: 'processor_payment_method' }))).toEqual({ kind: 'invalid', field: 'payment_method_id' })
    t.setReachable(false)
    expect(await refusal(() => t.checkout.complete(s.id, s.secret, direct))).toEqual({ kind: 'unavailable', field: null })
    expect(t.checkout.get(s.id, s.secret).status).toBe('ready')
    t.setReachable(true)
    expect((await t.checkout.complete(s.id, s.secret, direct)).status).toBe('completed')
    expect(t.count('local_charges')).toBe(1)
    expect(t.payments(s.id)).toEqual([{ status: 'succeeded', amount: 700, kind: 'purchase' }])
  })

  it('a payment left pending by a stop completes its session at the next start (key on the next poll), or is refunded when the session was canceled', async () => {
    const t = setup()
    /** What complete() had done when the process stopped: the payment opened and charged, the session not completed. */
    async function interrupted(s: { id: string }) {
      const payment = t.charges.open({ key: `checkout:${s.id}:pm_card_visa`, kind: 'purchase', accountId: null, checkoutId: s.id, amountCents: 700, paymentMethodId: 'pm_card_visa', description: 'Starter' })
      await t.charges.collect(payment, { reference: s.id })
      return payment
    }
    const s = t.ready('resumed')
    await t.checkout.resumePurchase(await interrupted(s))
    expect(t.count('local_charges')).toBe(1)
    expect(t.payments(s.id)).toEqual([{ status: 'succeeded', amount: 700, kind: 'purchase' }])
    const poll = t.checkout.get(s.id, s.secret)
    expect(poll).toMatchObject({ status: 'completed', site_slug: 'resumed' })
    expect(poll.api_key).toMatch(/^berth_/)
    expect(t.logged('a direct payment interrupted by a stop completed its checkout')).toBe(true)

    const gone = t.ready()
    const payment = await interrupted(gone)
    t.checkout.cancel(gone.id, gone.secret)
    await t.checkout.resumePurchase(payment)
    expect(t.payments(gone.id)).toEqual([{ status: 'refunded', amount: 700, kind: 'purchase' }])
    expect(t.refunded).toHaveLength(1)
    expect(t.count('subscriptions')).toBe(1)
  })
})

describe('paying on the hosted page', () => {
  it('waits for the processor: awaiting_payment with its URL, in_progress, then completed once however often paid is told', async () => {
    const t = setup()
    const s = t.ready('hosted')
    const awaiting = await t.checkout.complete(s.id, s.secret, {})
    expect(awaiting).toMatchObject({ status: 'awaiting_payment', payment_method: 'processor_checkout' })
    expect(awaiting.processor_checkout_url).toMatch(/^http:\/\/localhost:8080\/pay\/cs_test_/)
    expect(t.charged).toEqual([])
    const sessionRef = t.repo.find(s.id)!.processorSessionRef!
    await t.checkout.onProcessorEvent({ type: 'checkout.processing', sessionRef, reference: s.id })
    expect(t.checkout.get(s.id, s.secret).status).toBe('in_progress')
    const paid = { type: 'checkout.paid' as const, sessionRef, reference: s.id, paymentRef: 'pi_test_1', methodLabel: 'visa ending 4242 (test)', amountCents: 700, paymentMethodId: 'pm_card_visa' }
    await t.checkout.onProcessorEvent(paid)
    await t.checkout.onProcessorEvent(paid)
    expect(t.count('subscriptions')).toBe(1)
    expect(t.payments(s.id)).toEqual([{ status: 'succeeded', amount: 700, kind: 'purchase' }])
    // The new account's key shows on the first poll after the payment, and only then.
    const first = t.checkout.get(s.id, s.secret)
    expect(first).toMatchObject({ status: 'completed', site_slug: 'hosted' })
    expect(t.keys.authenticate(first.api_key!).accountId).toBe(t.repo.find(s.id)!.accountId)
    expect(t.checkout.get(s.id, s.secret)).not.toHaveProperty('api_key')
  })

  it('an expired hosted payment cancels the session and frees its slug; events of unknown sessions change nothing', async () => {
    const t = setup()
    const s = t.ready('gone')
    await t.checkout.complete(s.id, s.secret, {})
    const sessionRef = t.repo.find(s.id)!.processorSessionRef!
    await t.checkout.onProcessorEvent({ type: 'checkout.expired', sessionRef: 'cs_test_nobody', reference: s.id })
    expect(t.logged('processor event for an unknown session')).toBe(true)
    expect(t.checkout.get(s.id, s.secret).status).toBe('awaiting_payment')
    await t.checkout.onProcessorEvent({ type: 'checkout.expired', sessionRef, reference: s.id })
    expect(t.checkout.get(s.id, s.secret)).toMatchObject({ status: 'canceled' })
    expect(t.released).toEqual(['gone'])
  })
})

describe('canceling and expiry', () => {
  it('cancels a session not yet paid (freeing a chosen slug), never a completed one', async () => {
    const t = setup()
    const fresh = t.checkout.create({ sku: 'berth_starter_monthly' }, null)
    expect(t.checkout.cancel(fresh.id, fresh.checkout_secret).status).toBe('canceled')
    expect(t.released).toEqual([])
    const s = t.ready('freed')
    expect(t.checkout.cancel(s.id, s.secret).status).toBe('canceled')
    expect(t.released).toEqual(['freed'])
    expect(await refusal(() => t.checkout.cancel(s.id, s.secret))).toEqual({ kind: 'conflict', field: 'status' })
    const paid = t.ready()
    await t.checkout.complete(paid.id, paid.secret, direct)
    expect(await refusal(() => t.checkout.cancel(paid.id, paid.secret))).toEqual({ kind: 'conflict', field: 'status' })
  })

  it('a session unpaid 24 hours is canceled (not a minute before), by a request or by the maintenance pass', async () => {
    const t = setup()
    const polled = t.ready('late')
    const swept = t.ready('swept')
    t.clock.advance(24 * HOUR - 60_000)
    expect(t.checkout.expireOld()).toBe(0)
    expect(t.checkout.get(polled.id, polled.secret).status).toBe('ready')
    t.clock.advance(60_000)
    expect(t.checkout.get(polled.id, polled.secret)).toMatchObject({ status: 'canceled', error: 'Expired 24 h after creation without payment.' })
    expect(await refusal(() => t.checkout.complete(polled.id, polled.secret, direct))).toEqual({ kind: 'conflict', field: 'status' })
    // The pass cancels what is past its expiry (the request above, what is at it).
    t.clock.advance(1)
    expect(t.checkout.expireOld()).toBe(1)
    expect(t.checkout.get(swept.id, swept.secret).status).toBe('canceled')
    expect(t.released.sort()).toEqual(['late', 'swept'])
    expect(t.charged).toEqual([])
  })
})
