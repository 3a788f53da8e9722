import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess, type InProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import type { ExecResult } from '../../drivers/runtime/types'

/**
 * The account routes (issue 13) in-process: update and whoami, delete (keys, subscriptions,
 * sites), the subscriptions list, renewals driven by the manual clock (declines, retries,
 * suspension, a new card, cancel at period end), the billing-portal link and Berth's own portal
 * pages (signed, expiring, CSRF-checked forms), and proration when a site changes plan.
 */

/** A recording runtime whose `exec` plays the in-container claim agent: it keeps the token it is given. */
class ClaimingRuntime extends RecordingRuntime {
  tokens = new Map<string, string>()
  override async exec(slug: string, cmd: string[] = []): Promise<ExecResult> {
    this.tokens.set(slug, cmd.at(-1)!)
    return { exitCode: 0, output: '' }
  }
}

const DAY = 86_400_000
const MONTH = 30 * DAY
const V1 = '/api/v1'
const unique = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`
let ipCounter = 0
const ip = () => `198.19.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`

interface Bought { slug: string; key: string; accountId: string; subscriptionId: string }

/** Buys a site with a direct test payment (anonymously, or into `key`'s account) and waits until it is active. */
async function buy(h: InProcess, sku = 'svc_starter_monthly', key?: string): Promise<Bought> {
  const slug = unique('acct')
  const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku }, key, headers: { 'x-forwarded-for': ip() } })
  expect(created.status, created.text).toBe(201)
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `${V1}/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug } })
  const done = await h.call('POST', `${V1}/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  await h.services.jobs.drain()
  const owner = key ?? done.json.data.api_key
  const who = await h.call('GET', `${V1}/auth/whoami/`, { key: owner })
  return { slug, key: owner, accountId: who.json.data.user.id, subscriptionId: done.json.data.subscription_id }
}

const whoami = async (h: InProcess, key: string) => (await h.call('GET', `${V1}/auth/whoami/`, { key })).json.data
const subscriptions = async (h: InProcess, key: string) => {
  const res = await h.call('GET', `${V1}/account/subscriptions/`, { key })
  expect(res.status, res.text).toBe(200)
  return res.json.data as any[]
}
const subscription = async (h: InProcess, b: Bought) => (await subscriptions(h, b.key)).find((s) => s.id === b.subscriptionId)
const siteStatus = (h: InProcess, slug: string) => (h.services.store.sqlite.query('SELECT status FROM sites WHERE slug = ? ORDER BY created_at DESC LIMIT 1').get(slug) as { status: string }).status
const paymentsOf = (h: InProcess, accountId: string, kind?: string) => h.services.billing.paymentsOf(accountId).filter((p) => kind === undefined || p.kind === kind)
const createKey = async (h: InProcess, key: string, scopes: string[]) => {
  const res = await h.call('POST', `${V1}/keys/create/`, { key, body: { name: scopes.join('+'), scopes } })
  expect(res.status, res.text).toBe(201)
  return res.json.data.api_key as string
}
const iso = (ms: number) => new Date(ms).toISOString()

/** Sends a form of the billing portal the way a browser does: url-encoded, with the page's CSRF cookie. */
async function postForm(h: InProcess, path: string, fields: Record<string, string>, cookie?: string) {
  const res = await h.app.handle(new Request(`http://localhost${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
    body: new URLSearchParams(fields).toString(),
  }))
  return { status: res.status, headers: res.headers, text: await res.text() }
}

/** Opens the portal for `key`'s account: the page, its path, the CSRF cookie and the form's token. */
async function openPortal(h: InProcess, key: string, flow = '') {
  const link = await h.call('GET', `${V1}/account/billing-portal/${flow ? `?flow=${flow}` : ''}`, { key })
  expect(link.status, link.text).toBe(200)
  const url = new URL(link.json.data.url)
  const page = await h.call('GET', url.pathname + url.search)
  const cookie = page.headers.get('set-cookie')?.split(';')[0] ?? ''
  const csrf = /name="csrf" value="([0-9a-f]+)"/.exec(page.text)?.[1] ?? ''
  return { link: link.json.data, base: url.pathname, page, cookie, csrf }
}

describe('account update and whoami', () => {
  const h = inProcess()
  afterAll(() => h.close())

  it('applies the fields sent, email lowercased, and whoami shows them; a later update changes only its own field', async () => {
    const { key, accountId } = await h.register('first@example.com')
    const res = await h.call('POST', `${V1}/account/update/`, { key, body: { email: 'Ada.Lovelace@Example.COM', language: 'fr', first_name: 'Ada', last_name: 'Lovelace' } })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ id: accountId, email: 'ada.lovelace@example.com', language: 'fr', first_name: 'Ada', last_name: 'Lovelace', status: 'active', payment_method: null, updated_at: iso(h.clock.now()) })
    expect((await whoami(h, key)).user).toEqual({ id: accountId, email: 'ada.lovelace@example.com', language: 'fr', first_name: 'Ada', last_name: 'Lovelace' })

    h.clock.advance(1000)
    const later = await h.call('POST', `${V1}/account/update/`, { key, body: { last_name: 'Byron-King', first_name: 'Zoë Éloïse' } })
    expect(later.status, later.text).toBe(200)
    expect((await whoami(h, key)).user).toEqual({ id: accountId, email: 'ada.lovelace@example.com', language: 'fr', first_name: 'Zoë Éloïse', last_name: 'Byron-King' })
    expect(later.json.data.updated_at).toBe(iso(h.clock.now()))
    const back = await h.call('POST', `${V1}/account/update/`, { key, body: { language: 'en' } })
    expect(back.json.data).toMatchObject({ language: 'en', first_name: 'Zoë Éloïse' })
  })

  it('refuses bad fields with 422 naming the field, and changes nothing', async () => {
    const { key } = await h.register('keep@example.com')
    await h.call('POST', `${V1}/account/update/`, { key, body: { first_name: 'Grace', last_name: 'Hopper', language: 'fr' } })
    const before = await whoami(h, key)
    const cases: [unknown, string | null, RegExp?][] = [
      [{ email: 'not-an-email' }, 'email', /email/],
      [{ email: 'a@example.com', language: 'de' }, 'language', /en.*fr/],
      [{}, null, /at least one of email, language, first_name, last_name/],
      [{ nickname: 'Amazing Grace' }, 'nickname', /nickname/],
      [{ first_name: 'Grace', name: 'x' }, 'name', /name/],
      [{ first_name: 'Gr\nace' }, 'first_name', /first_name/],
      [{ last_name: 'Hop\u0007per' }, 'last_name', /last_name/],
      [{ last_name: 'Hop\u009bper' }, 'last_name'],
      [{ first_name: '' }, 'first_name'],
      [{ first_name: 'x'.repeat(101) }, 'first_name'],
      [{ language: null }, 'language'],
    ]
    for (const [body, param, says] of cases) {
      const res = await h.call('POST', `${V1}/account/update/`, { key, body })
      expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }, JSON.stringify(body)).toEqual({ status: 422, code: 'VALIDATION_ERROR', param })
      if (says) expect(res.json.error.message).toMatch(says)
    }
    expect(await whoami(h, key)).toEqual(before)
    expect(before.user).toMatchObject({ email: 'keep@example.com', first_name: 'Grace', last_name: 'Hopper', language: 'fr' })
  })

  it('needs admin: a read-only key gets 403 on update, delete and the portal, and may list subscriptions', async () => {
    const { key } = await h.register('scoped@example.com')
    const reader = await createKey(h, key, ['read'])
    const writer = await createKey(h, key, ['read', 'write'])
    for (const k of [reader, writer]) {
      const update = await h.call('POST', `${V1}/account/update/`, { key: k, body: { email: 'thief@example.com' } })
      expect(update.status).toBe(403)
      expect(update.json.error).toMatchObject({ code: 'FORBIDDEN', param: null })
      expect(update.json.error.message).toContain("'admin' scope")
      expect((await h.call('DELETE', `${V1}/account/delete/`, { key: k, body: { confirm: 'DELETE' } })).status).toBe(403)
      expect((await h.call('GET', `${V1}/account/billing-portal/`, { key: k })).status).toBe(403)
    }
    expect((await h.call('GET', `${V1}/account/subscriptions/`, { key: reader })).status).toBe(200)
    const adminOnly = await createKey(h, key, ['admin'])
    expect((await h.call('GET', `${V1}/account/subscriptions/`, { key: adminOnly })).status).toBe(403)
    expect((await whoami(h, key)).user.email).toBe('scoped@example.com')
    expect((await whoami(h, reader)).user.email).toBe('scoped@example.com')
  })

  it('answers 401 without a key, or with a dead one, on every account route', async () => {
    const { key, keyId } = await h.register()
    await h.call('POST', `${V1}/keys/${keyId}/revoke/`, { key })
    for (const k of [undefined, key]) {
      for (const [method, path, body] of ROUTES) {
        const res = await h.call(method, path, { key: k, body })
        expect(res.status, `${method} ${path}`).toBe(401)
        expect(res.json.error.code).toBe('UNAUTHORIZED')
      }
    }
  })
})

const ROUTES: [string, string, unknown][] = [
  ['POST', `${V1}/account/update/`, { email: 'site@example.com' }],
  ['DELETE', `${V1}/account/delete/`, { confirm: 'DELETE' }],
  ['GET', `${V1}/account/subscriptions/`, undefined],
  ['GET', `${V1}/account/billing-portal/`, undefined],
]

describe('a site-scoped key (claim flow)', () => {
  const runtime = new ClaimingRuntime()
  const h = inProcess({ runtime })
  afterAll(async () => {
    await h.close()
    runtime.close()
  })

  it('gets 403 on every account route, changes nothing, and still works on its own site', async () => {
    const b = await buy(h)
    const requested = await h.call('POST', `${V1}/keys/claim/request/`, { body: { site_slug: b.slug }, headers: { 'x-forwarded-for': ip() } })
    expect(requested.status, requested.text).toBe(201)
    const claimed = await h.call('POST', `${V1}/keys/claim/`, { body: { claim_token: runtime.tokens.get(b.slug) }, headers: { 'x-forwarded-for': ip() } })
    expect(claimed.status, claimed.text).toBe(201)
    const siteKey = claimed.json.data.api_key
    expect(claimed.json.data.site_scoped).toBe(true)
    for (const [method, path, body] of ROUTES) {
      const res = await h.call(method, path, { key: siteKey, body })
      expect(res.status, `${method} ${path}`).toBe(403)
      expect(res.json.error.code).toBe('FORBIDDEN')
    }
    // Holding the scope is not enough: the read route names the key's own site and asks for an account key.
    const read = await h.call('GET', `${V1}/account/subscriptions/`, { key: siteKey })
    expect(read.json.error.message).toMatch(new RegExp(`only on its own site, '${b.slug}'.*account key`))
    expect((await whoami(h, b.key)).user.email).toBeNull()
    expect((await h.call('GET', `${V1}/sites/${b.slug}/`, { key: siteKey })).status).toBe(200)
    expect((await subscription(h, b)).status).toBe('active')
  })
})

describe('DELETE /account/delete/', () => {
  const h = inProcess()
  afterAll(() => h.close())

  it('refuses anything but confirm "DELETE" with 422 confirm, and changes nothing', async () => {
    const b = await buy(h)
    const before = { who: await whoami(h, b.key), subs: await subscriptions(h, b.key) }
    for (const body of [{}, { confirm: 'delete' }, { confirm: 'DELETE ' }, { confirm: ' DELETE' }, { confirm: 'Delete' }, { confirm: '' }, { confirm: 'yes' }]) {
      const res = await h.call('DELETE', `${V1}/account/delete/`, { key: b.key, body })
      expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }, JSON.stringify(body)).toEqual({ status: 422, code: 'VALIDATION_ERROR', param: 'confirm' })
      expect(res.json.error.message).toContain('DELETE')
    }
    for (const body of [undefined, { confirm: true }, { confirm: null }]) {
      const res = await h.call('DELETE', `${V1}/account/delete/`, { key: b.key, body })
      expect(res.status, JSON.stringify(body)).toBe(422)
      expect(res.json.error.code).toBe('VALIDATION_ERROR')
      expect(res.json.error.message).toContain('"DELETE"')
    }
    expect({ who: await whoami(h, b.key), subs: await subscriptions(h, b.key) }).toEqual(before)
    expect(siteStatus(h, b.slug)).toBe('active')
  })

  it('with "DELETE": every key answers 401, subscriptions end, sites are scheduled for deletion, personal fields go; other accounts untouched', async () => {
    const runtime = (h.services.runtime as RecordingRuntime)
    const owner = await buy(h)
    const second = await buy(h, 'svc_business_monthly', owner.key)
    await h.call('POST', `${V1}/account/update/`, { key: owner.key, body: { email: 'gone@example.com', first_name: 'Gone', last_name: 'Soon' } })
    const keys = [owner.key, await createKey(h, owner.key, ['read']), await createKey(h, owner.key, ['read', 'write', 'admin'])]
    const portal = await openPortal(h, owner.key)
    expect(portal.page.status).toBe(200)
    const other = await buy(h)
    const paymentsBefore = paymentsOf(h, owner.accountId).length

    const res = await h.call('DELETE', `${V1}/account/delete/`, { key: keys[2], body: { confirm: 'DELETE' } })
    expect(res.status, res.text).toBe(200)
    const deletion = iso(h.clock.now() + 7 * DAY)
    expect(res.json.data).toMatchObject({ id: owner.accountId, status: 'anonymized', keys_revoked: 3 })
    expect(res.json.data.subscriptions_canceled.sort()).toEqual([owner.subscriptionId, second.subscriptionId].sort())
    expect(res.json.data.sites_scheduled_for_deletion.sort((a: { slug: string }, b: { slug: string }) => a.slug.localeCompare(b.slug)))
      .toEqual([owner.slug, second.slug].sort().map((slug) => ({ slug, deletion_scheduled_for: deletion })))

    // Revoked, not only refused: the keys stay dead whatever becomes of the account row.
    const keyRows = h.services.store.sqlite.query('SELECT revoked_at, revoked_reason FROM api_keys WHERE account_id = ?').all(owner.accountId)
    expect(keyRows).toEqual(keys.map(() => ({ revoked_at: h.clock.now(), revoked_reason: 'revoked' })))
    for (const k of keys) {
      const again = await h.call('GET', `${V1}/auth/whoami/`, { key: k })
      expect(again.status).toBe(401)
      expect((await h.call('GET', `${V1}/account/subscriptions/`, { key: k })).status).toBe(401)
    }
    for (const slug of [owner.slug, second.slug]) {
      expect(siteStatus(h, slug)).toBe('pending_deletion')
      expect(runtime.sites.get(slug)?.running).toBe(false)
      expect((await h.services.directory.resolve(slug))?.state).toBe('pending_deletion')
    }
    const subs = h.services.billing.subscriptionsOf(owner.accountId)
    expect(subs.map((s) => [s.status, s.endedAt, s.nextChargeAt])).toEqual([['canceled', h.clock.now(), null], ['canceled', h.clock.now(), null]])
    const account = h.services.accountsRepo.find(owner.accountId)!
    expect(account).toMatchObject({ status: 'anonymized', email: null, firstName: null, lastName: null, paymentMethodId: null, paymentMethodLabel: null })
    expect(JSON.stringify(account)).not.toContain('gone@example.com')
    // Payments are kept (accounting), tied only to the anonymized account.
    expect(paymentsOf(h, owner.accountId)).toHaveLength(paymentsBefore)
    // The billing portal link opened before no longer opens.
    expect((await h.call('GET', portal.base)).status).toBe(404)
    // Renewals never charge a deleted account.
    h.clock.advance(MONTH + DAY)
    await h.services.subscriptions.runDue()
    expect(paymentsOf(h, owner.accountId)).toHaveLength(paymentsBefore)

    expect((await whoami(h, other.key)).user.id).toBe(other.accountId)
    expect(siteStatus(h, other.slug)).toBe('active')
    expect((await subscription(h, other)).status).toBe('active')
  })

  it('waits for a site still being set up (409, nothing deleted), which would otherwise come up after the deletion', async () => {
    const slug = unique('prov')
    const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': ip() } })
    const { id, checkout_secret: secret } = created.json.data
    await h.call('POST', `${V1}/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug } })
    const done = await h.call('POST', `${V1}/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
    const key = done.json.data.api_key
    expect(siteStatus(h, slug)).toBe('provisioning')
    const early = await h.call('DELETE', `${V1}/account/delete/`, { key, body: { confirm: 'DELETE' } })
    expect(early.status, early.text).toBe(409)
    expect(early.json.error.code).toBe('CONFLICT')
    expect(early.json.error.message).toContain(`GET /sites/${slug}/`)
    expect((await h.call('GET', `${V1}/auth/whoami/`, { key })).status).toBe(200)
    await h.services.jobs.drain()
    expect(siteStatus(h, slug)).toBe('active')
    const res = await h.call('DELETE', `${V1}/account/delete/`, { key, body: { confirm: 'DELETE' } })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.sites_scheduled_for_deletion.map((s: { slug: string }) => s.slug)).toEqual([slug])
    await h.services.jobs.drain()
    expect(siteStatus(h, slug)).toBe('pending_deletion')
  })
})

describe('GET /account/subscriptions/', () => {
  const h = inProcess()
  afterAll(() => h.close())

  it('lists the purchase with its plan, CAD amount, 30-day period, site and card; others see none of it', async () => {
    const boughtAt = h.clock.now()
    const b = await buy(h)
    const starter = (await h.call('GET', `${V1}/plans/starter/`)).json.data
    const list = await subscriptions(h, b.key)
    expect(list).toEqual([{
      id: b.subscriptionId,
      status: 'active',
      plan: { slug: 'starter', name: starter.name, hosting_type: starter.hosting_type, max_sites: starter.features.max_sites, price: starter.price },
      billing_period: 'monthly',
      amount: starter.price.monthly,
      currency: 'CAD',
      current_period_start: iso(boughtAt),
      current_period_end: iso(boughtAt + MONTH),
      cancel_at_period_end: false,
      next_charge_at: iso(boughtAt + MONTH),
      credit: 0,
      unpaid_since: null,
      suspends_at: null,
      last_charge_error: null,
      payment_method: { label: 'visa ending 4242 (test)' },
      sites: [b.slug],
      created_at: iso(boughtAt),
      ended_at: null,
    }])
    expect((await whoami(h, b.key)).account).toEqual({ sites: 1, active_subscriptions: 1 })

    const stranger = await h.register()
    expect(await subscriptions(h, stranger.key)).toEqual([])
    const neighbour = await buy(h)
    expect((await subscriptions(h, neighbour.key)).map((s) => s.id)).toEqual([neighbour.subscriptionId])
  })

  it('an annual plan runs 365 days at the annual price; newest first', async () => {
    const b = await buy(h, 'svc_starter_monthly')
    h.clock.advance(1000)
    const annual = await buy(h, 'svc_business_annual', b.key)
    const business = (await h.call('GET', `${V1}/plans/business/`)).json.data
    const list = await subscriptions(h, b.key)
    expect(list.map((s) => s.id)).toEqual([annual.subscriptionId, b.subscriptionId])
    expect(list[0]).toMatchObject({ billing_period: 'annual', amount: business.price.annual, sites: [annual.slug] })
    expect(Date.parse(list[0].current_period_end) - Date.parse(list[0].current_period_start)).toBe(365 * DAY)
  })
})

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
