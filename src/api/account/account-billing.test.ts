import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buy, DAY, iso, MONTH, openPortal, paymentsOf, postForm, siteStatus, subscription, V1, type Bought } from '../../../test/helpers/account'
import { inProcess, type InProcess } from '../../../test/helpers/in-process'
import type { RecordingRuntime } from '../../../test/helpers/recording-runtime'

/**
 * The account's billing (issue 13) in-process: renewals driven by the manual clock (declines,
 * retries, suspension, a new card, cancel at period end), the billing-portal link and Berth's own
 * portal pages (signed, expiring, CSRF-checked forms), and proration when a site changes plan.
 * The account routes themselves are in account.test.ts.
 */

describe('renewals (the manual clock and runDue)', () => {
  let h: InProcess
  beforeAll(() => {
    h = inProcess()
  })
  afterAll(() => h.close())

  it('charges once at the period end and extends the period by 30 days', async () => {
    const b = await buy(h)
    const start = await subscription(h, b)
    const end = Date.parse(start.current_period_end)
    h.clock.set(end - 60_000)
    await h.services.subscriptions.runDue()
    expect(paymentsOf(h, b.accountId, 'renewal')).toHaveLength(0)

    h.clock.set(end + 60_000)
    await h.services.subscriptions.runDue()
    await h.services.subscriptions.runDue()
    const renewals = paymentsOf(h, b.accountId, 'renewal')
    expect(renewals).toHaveLength(1)
    expect(renewals[0]).toMatchObject({ status: 'succeeded', amountCents: 700, periodStart: end, periodEnd: end + MONTH, methodLabel: 'visa ending 4242 (test)' })
    expect(renewals[0]!.description).toContain(b.slug)
    expect(await subscription(h, b)).toMatchObject({ status: 'active', current_period_start: iso(end), current_period_end: iso(end + MONTH), next_charge_at: iso(end + MONTH) })
    h.clock.advance(DAY)
    await h.services.subscriptions.runDue()
    expect(paymentsOf(h, b.accountId, 'renewal')).toHaveLength(1)
  })

  it('a declined renewal: past_due, retries after 1, 3 and 5 days, sites suspended at 7 days; a good card pays once and brings them back', async () => {
    const runtime = h.services.runtime as RecordingRuntime
    const b = await buy(h)
    const end = Date.parse((await subscription(h, b)).current_period_end)
    await h.services.subscriptions.paymentMethodChanged(b.accountId, 'pm_card_visa_chargeDeclined', 'visa ending 0002 (test)')
    expect(await subscription(h, b)).toMatchObject({ status: 'active', payment_method: { label: 'visa ending 0002 (test)' } })

    h.clock.set(end + 60_000)
    await h.services.subscriptions.runDue()
    expect(await subscription(h, b)).toMatchObject({
      status: 'past_due', last_charge_error: 'The card was declined.', unpaid_since: iso(end), next_charge_at: iso(end + DAY), suspends_at: iso(end + 7 * DAY), current_period_end: iso(end),
    })
    expect(siteStatus(h, b.slug)).toBe('active')
    const failed = () => paymentsOf(h, b.accountId, 'renewal').filter((p) => p.status === 'failed').length
    expect(failed()).toBe(1)
    await h.services.subscriptions.runDue()
    expect(failed()).toBe(1)

    for (const [at, next] of [[1, 3], [3, 5], [5, null]] as const) {
      h.clock.set(end + at * DAY)
      await h.services.subscriptions.runDue()
      expect(await subscription(h, b), `retry at ${at} days`).toMatchObject({ status: 'past_due', next_charge_at: next === null ? null : iso(end + next * DAY) })
    }
    expect(failed()).toBe(4)
    h.clock.set(end + 7 * DAY - 60_000)
    await h.services.subscriptions.runDue()
    expect(siteStatus(h, b.slug)).toBe('active')

    h.clock.set(end + 7 * DAY)
    await h.services.subscriptions.runDue()
    expect(siteStatus(h, b.slug)).toBe('suspended')
    expect(runtime.sites.get(b.slug)?.running).toBe(false)
    expect((await h.services.directory.resolve(b.slug))?.state).toBe('suspended')
    expect((await h.call('GET', `${V1}/sites/${b.slug}/`, { key: b.key })).json.data.status).toBe('suspended')

    const paid = await h.services.subscriptions.paymentMethodChanged(b.accountId, 'pm_card_visa', 'visa ending 4242 (test)')
    expect(paid).toEqual([b.subscriptionId])
    await h.services.jobs.drain()
    expect(await subscription(h, b)).toMatchObject({ status: 'active', unpaid_since: null, last_charge_error: null, current_period_start: iso(end), current_period_end: iso(end + MONTH), next_charge_at: iso(end + MONTH) })
    expect(siteStatus(h, b.slug)).toBe('active')
    expect(runtime.sites.get(b.slug)?.running).toBe(true)
    await h.services.subscriptions.runDue()
    const succeeded = paymentsOf(h, b.accountId, 'renewal').filter((p) => p.status === 'succeeded')
    expect(succeeded).toHaveLength(1)
    expect(succeeded[0]).toMatchObject({ amountCents: 700, periodStart: end, periodEnd: end + MONTH })
  })

  it('a new card through the portal pays the unpaid renewal at once and says so', async () => {
    const b = await buy(h)
    const end = Date.parse((await subscription(h, b)).current_period_end)
    await h.services.subscriptions.paymentMethodChanged(b.accountId, 'pm_card_visa_chargeDeclined', 'visa ending 0002 (test)')
    h.clock.set(end + 2 * DAY)
    await h.services.subscriptions.runDue()
    expect((await subscription(h, b)).status).toBe('past_due')

    const portal = await openPortal(h, b.key, 'payment_method_update')
    expect(portal.page.text).toContain('The card was declined.')
    const declined = await postForm(h, `${portal.base}card`, { csrf: portal.csrf, card: '4000 0000 0000 0002', exp: '12/34', cvc: '123' }, portal.cookie)
    expect(declined.status).toBe(303)
    expect(declined.headers.get('location')).toBe(`${portal.base}?notice=card_saved_declined`)
    expect((await subscription(h, b)).status).toBe('past_due')

    const saved = await postForm(h, `${portal.base}card`, { csrf: portal.csrf, card: '4242 4242 4242 4242', exp: '12/34', cvc: '123' }, portal.cookie)
    expect(saved.status).toBe(303)
    expect(saved.headers.get('location')).toBe(`${portal.base}?notice=card_saved_paid`)
    expect(await subscription(h, b)).toMatchObject({ status: 'active', payment_method: { label: 'visa ending 4242 (test)' }, current_period_end: iso(end + MONTH) })
    const after = await h.call('GET', saved.headers.get('location')!, { headers: { cookie: portal.cookie } })
    expect(after.text).toContain('the sites are active again')
  })

  it('cancel at period end: no charge, the subscription ends at the period end and its site is scheduled for deletion', async () => {
    const b = await buy(h)
    const end = Date.parse((await subscription(h, b)).current_period_end)
    h.services.subscriptions.setCancelAtPeriodEnd(b.accountId, b.subscriptionId, true)
    expect(await subscription(h, b)).toMatchObject({ status: 'active', cancel_at_period_end: true, next_charge_at: null })

    h.clock.set(end - 60_000)
    await h.services.subscriptions.runDue()
    expect((await subscription(h, b)).status).toBe('active')
    expect(siteStatus(h, b.slug)).toBe('active')

    h.clock.set(end + 1)
    await h.services.subscriptions.runDue()
    expect(await subscription(h, b)).toMatchObject({ status: 'canceled', ended_at: iso(end + 1), next_charge_at: null })
    expect(siteStatus(h, b.slug)).toBe('pending_deletion')
    const site = (await h.call('GET', `${V1}/sites/${b.slug}/`, { key: b.key })).json.data
    expect(site.deletion_scheduled_for).toBe(iso(end + 1 + 7 * DAY))
    expect(paymentsOf(h, b.accountId, 'renewal')).toEqual([])
    // A canceled subscription cannot be resumed.
    expect(() => h.services.subscriptions.setCancelAtPeriodEnd(b.accountId, b.subscriptionId, false)).toThrow(/canceled/)
  })
})

describe('GET /account/billing-portal/ and the portal pages', () => {
  const h = inProcess()
  afterAll(() => h.close())
  let b: Bought

  beforeAll(async () => {
    b = await buy(h)
  })

  it('returns a signed link under site_url valid one hour, flow echoed', async () => {
    const res = await h.call('GET', `${V1}/account/billing-portal/`, { key: b.key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toEqual({ url: expect.stringMatching(/\/$/), expires_at: iso(h.clock.now() + 3600_000), flow: '', processor: 'local', test_mode: true })
    expect(res.json.data.url.startsWith(`${h.services.config.server.siteUrl}/billing/portal/`)).toBe(true)
    const card = await h.call('GET', `${V1}/account/billing-portal/?flow=payment_method_update`, { key: b.key })
    expect(card.json.data.flow).toBe('payment_method_update')
    expect(card.json.data.url).toMatch(/\/billing\/portal\/[^/]+\/\?flow=payment_method_update$/)
    const empty = await h.call('GET', `${V1}/account/billing-portal/?flow=`, { key: b.key })
    expect(empty.status).toBe(200)
    expect(empty.json.data.flow).toBe('')
    const bogus = await h.call('GET', `${V1}/account/billing-portal/?flow=bogus`, { key: b.key })
    expect(bogus.status).toBe(422)
    expect(bogus.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'flow' })
    expect(bogus.json.error.message).toContain('payment_method_update')
  })

  it('opens a page with the card on file, the subscription and the purchase, with a receipt', async () => {
    const { page, base, cookie, csrf } = await openPortal(h, b.key)
    expect(page.status).toBe(200)
    expect(page.headers.get('content-type')).toMatch(/^text\/html/)
    expect(page.headers.get('cache-control')).toBe('no-store')
    expect(cookie).toMatch(/^berth_portal_csrf=[0-9a-f]{48}$/)
    expect(cookie.split('=')[1]).toBe(csrf)
    expect(page.headers.get('set-cookie')).toContain(`Path=${base}`)
    expect(page.text).toContain('visa ending 4242 (test)')
    expect(page.text).toContain(`data-subscription="${b.subscriptionId}"`)
    expect(page.text).toContain('Starter (monthly)')
    expect(page.text).toContain(b.slug)
    expect(page.text).toContain('7.00 CAD')
    expect(page.text).toContain('TEST MODE')
    expect(page.text).not.toContain('autofocus')
    expect((await openPortal(h, b.key, 'payment_method_update')).page.text).toContain('autofocus')
    const [purchase] = paymentsOf(h, b.accountId, 'purchase')
    const receipt = await h.call('GET', `${base}receipts/${purchase!.id}/`)
    expect(receipt.status).toBe(200)
    expect(receipt.text).toContain('7.00 CAD')
    expect(receipt.text).toContain(purchase!.processorRef)
    // Another account's payment is not found through this link.
    const other = await buy(h)
    const [theirs] = paymentsOf(h, other.accountId, 'purchase')
    expect((await h.call('GET', `${base}receipts/${theirs!.id}/`)).status).toBe(404)
  })

  it('speaks French to an account whose language is fr', async () => {
    const fr = await buy(h)
    await h.call('POST', `${V1}/account/update/`, { key: fr.key, body: { language: 'fr' } })
    const { page } = await openPortal(h, fr.key)
    expect(page.text).toContain('<html lang="fr">')
    expect(page.text).toContain('Carte enregistrée')
  })

  it('a tampered token, another account swapped in, and an expired link all get the 404 page', async () => {
    const { base } = await openPortal(h, b.key)
    const token = base.split('/')[3]!
    const [account, expiry, sig] = token.split('.')
    const other = await h.register()
    const forged = [
      `${account}.${expiry}.${sig!.slice(0, -1)}${sig!.endsWith('A') ? 'B' : 'A'}`,
      `${other.accountId}.${expiry}.${sig}`,
      `${account}.${Number(expiry) + 86_400}.${sig}`,
      'not-a-token',
    ]
    for (const t of forged) {
      const res = await h.call('GET', `/billing/portal/${t}/`)
      expect(res.status, t).toBe(404)
      expect(res.headers.get('content-type')).toMatch(/^text\/html/)
      expect(res.text).toContain('GET /api/v1/account/billing-portal/')
      expect(res.text).not.toContain('visa ending')
    }
    h.clock.advance(3600_000 - 1000)
    expect((await h.call('GET', base)).status).toBe(200)
    h.clock.advance(2000)
    const expired = await h.call('GET', base)
    expect(expired.status).toBe(404)
    expect(expired.text).toContain('expired')
  })

  it('the card form replaces the card with the CSRF cookie, and refuses without it (403, card unchanged)', async () => {
    const { base, cookie, csrf } = await openPortal(h, b.key)
    const label = async () => (await subscription(h, b)).payment_method?.label
    const card = { card: '5555 5555 5555 4444', exp: '12/34', cvc: '123' }

    const noCookie = await postForm(h, `${base}card`, { csrf, ...card })
    expect(noCookie.status).toBe(403)
    expect(noCookie.text).toContain('Nothing was changed')
    const wrongField = await postForm(h, `${base}card`, { csrf: 'f'.repeat(48), ...card }, cookie)
    expect(wrongField.status).toBe(403)
    const noField = await postForm(h, `${base}card`, card, cookie)
    expect(noField.status).toBe(403)
    expect(await label()).toBe('visa ending 4242 (test)')

    const badNumber = await postForm(h, `${base}card`, { csrf, ...card, card: '1234 5678 9012 3456' }, cookie)
    expect(badNumber.status).toBe(422)
    expect(badNumber.text).toContain('4242 4242 4242 4242')
    const pastExpiry = await postForm(h, `${base}card`, { csrf, ...card, exp: '01/20' }, cookie)
    expect(pastExpiry.status).toBe(422)
    expect(await label()).toBe('visa ending 4242 (test)')

    const saved = await postForm(h, `${base}card`, { csrf, ...card }, cookie)
    expect(saved.status).toBe(303)
    expect(saved.headers.get('location')).toBe(`${base}?notice=card_saved`)
    expect(await label()).toBe('mastercard ending 4444 (test)')
    const page = await h.call('GET', saved.headers.get('location')!, { headers: { cookie } })
    expect(page.text).toContain('mastercard ending 4444 (test)')
    expect(page.text).toContain('Card saved.')
  })

  it('cancel and resume through the portal, CSRF-checked; another account’s subscription is not found', async () => {
    const { base, cookie, csrf } = await openPortal(h, b.key)
    const path = `${base}subscriptions/${b.subscriptionId}/`
    expect((await postForm(h, `${path}cancel`, { csrf })).status).toBe(403)
    expect((await subscription(h, b)).cancel_at_period_end).toBe(false)

    const canceled = await postForm(h, `${path}cancel`, { csrf }, cookie)
    expect(canceled.status).toBe(303)
    expect(await subscription(h, b)).toMatchObject({ cancel_at_period_end: true, next_charge_at: null, status: 'active' })
    const resumed = await postForm(h, `${path}resume`, { csrf }, cookie)
    expect(resumed.status).toBe(303)
    expect((await subscription(h, b)).cancel_at_period_end).toBe(false)

    const other = await buy(h)
    const theirs = await postForm(h, `${base}subscriptions/${other.subscriptionId}/cancel`, { csrf }, cookie)
    expect(theirs.status).toBe(404)
    expect((await subscription(h, other)).cancel_at_period_end).toBe(false)
  })
})

describe('proration when a site changes plan', () => {
  let h: InProcess
  let prices: Record<string, number>
  beforeAll(async () => {
    h = inProcess()
    const plans = (await h.call('GET', `${V1}/plans/`)).json.data as { slug: string; price: { monthly: number } }[]
    prices = Object.fromEntries(plans.map((p) => [p.slug, Math.round(p.price.monthly * 100)]))
  })
  afterAll(() => h.close())
  const scale = (b: Bought, plan: string) => h.call('POST', `${V1}/sites/${b.slug}/scale/`, { key: b.key, body: { new_plan: plan } })

  it('an upgrade halfway through the period charges the prorated difference at once', async () => {
    const b = await buy(h)
    const end = Date.parse((await subscription(h, b)).current_period_end)
    h.clock.advance(MONTH / 2 + 3 * 3600_000)
    const res = await scale(b, 'business')
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.plan).toBe('business')
    const expected = Math.round((prices.business! - prices.starter!) * (end - h.clock.now()) / MONTH)
    expect(expected).toBeGreaterThan(0)
    const prorations = paymentsOf(h, b.accountId, 'proration')
    expect(prorations).toHaveLength(1)
    expect(prorations[0]).toMatchObject({ status: 'succeeded', amountCents: expected, methodLabel: 'visa ending 4242 (test)', periodEnd: end })
    expect(await subscription(h, b)).toMatchObject({ plan: { slug: 'business' }, amount: prices.business! / 100, current_period_end: iso(end), credit: 0 })
  })

  it('an upgrade with a declining card is 402 and changes nothing', async () => {
    const b = await buy(h)
    await h.services.subscriptions.paymentMethodChanged(b.accountId, 'pm_card_visa_chargeDeclined', 'visa ending 0002 (test)')
    h.clock.advance(DAY)
    const before = await subscription(h, b)
    const res = await scale(b, 'business')
    expect(res.status, res.text).toBe(402)
    expect(res.json.error).toMatchObject({ code: 'PAYMENT_DECLINED', param: 'new_plan' })
    expect(res.json.error.message).toMatch(/declined.*billing-portal|declined.*getBillingPortal/)
    expect(siteStatus(h, b.slug)).toBe('active')
    expect((await h.call('GET', `${V1}/sites/${b.slug}/`, { key: b.key })).json.data.plan).toBe('starter')
    expect(await subscription(h, b)).toEqual(before)
    expect(paymentsOf(h, b.accountId, 'proration')).toEqual([])
  })

  it('an upgrade interrupted by a stop after the charge is refunded at the next start, and the plan is unchanged', async () => {
    const b = await buy(h)
    h.clock.advance(DAY)
    const s = h.services.billing.findSubscriptionById(b.subscriptionId)!
    // What a process killed between the charge and the plan change leaves: a pending proration the processor charged.
    await h.services.subscriptions.prorate(s, prices.business!, 'Business')
    expect(paymentsOf(h, b.accountId, 'proration')).toMatchObject([{ status: 'pending' }])
    await h.services.charges.resumePending(h.clock.now() + 1)
    expect(paymentsOf(h, b.accountId, 'proration')).toMatchObject([{ status: 'refunded', refundReason: expect.stringMatching(/interrupted/) }])
    expect((await subscription(h, b))!.plan.slug).toBe('starter')
    const charged = h.services.store.sqlite.query("SELECT count(*) AS n FROM local_charges WHERE idempotency_key LIKE 'proration:%' AND idempotency_key LIKE ?").get(`%${b.subscriptionId}%`) as { n: number }
    expect(charged.n).toBe(1)
  })

  it('a downgrade is credited and the next renewal is reduced by the credit', async () => {
    const b = await buy(h, 'svc_business_monthly')
    const end = Date.parse((await subscription(h, b)).current_period_end)
    h.clock.set(end - DAY)
    const res = await scale(b, 'starter')
    expect(res.status, res.text).toBe(200)
    const credit = Math.round((prices.business! - prices.starter!) * DAY / MONTH)
    expect(await subscription(h, b)).toMatchObject({ plan: { slug: 'starter' }, amount: prices.starter! / 100, credit: credit / 100 })
    expect(paymentsOf(h, b.accountId, 'proration')).toEqual([])

    h.clock.set(end + 1)
    await h.services.subscriptions.runDue()
    const [renewal] = paymentsOf(h, b.accountId, 'renewal')
    expect(renewal).toMatchObject({ status: 'succeeded', amountCents: prices.starter! - credit })
    expect(renewal!.description).toContain('credit applied')
    expect((await subscription(h, b)).credit).toBe(0)
  })

  it('a credit larger than a period pays the renewal whole and the rest carries to the next one', async () => {
    const b = await buy(h, 'svc_business_monthly')
    const end = Date.parse((await subscription(h, b)).current_period_end)
    h.clock.set(end - MONTH / 2)
    expect((await scale(b, 'starter')).status).toBe(200)
    const credit = Math.round((prices.business! - prices.starter!) / 2)
    expect(credit).toBeGreaterThan(prices.starter!)

    h.clock.set(end + 1)
    await h.services.subscriptions.runDue()
    expect(paymentsOf(h, b.accountId, 'renewal')[0]).toMatchObject({ status: 'succeeded', amountCents: 0 })
    expect(await subscription(h, b)).toMatchObject({ status: 'active', current_period_end: iso(end + MONTH), credit: (credit - prices.starter!) / 100 })

    h.clock.set(end + MONTH + 1)
    await h.services.subscriptions.runDue()
    expect(paymentsOf(h, b.accountId, 'renewal')[0]).toMatchObject({ status: 'succeeded', amountCents: 2 * prices.starter! - credit })
    expect((await subscription(h, b)).credit).toBe(0)
  })
})
