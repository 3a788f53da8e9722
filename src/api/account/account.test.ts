import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { buy, createKey, DAY, ip, iso, MONTH, openPortal, paymentsOf, siteStatus, subscription, subscriptions, unique, V1, whoami } from '../../../test/helpers/account'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import type { ExecResult } from '../../drivers/runtime/types'

/**
 * The account routes (issue 13) in-process: update and whoami, the scopes and keys they need,
 * delete (keys, subscriptions, sites) and the subscriptions list. Renewals, the billing portal and
 * proration are in account-billing.test.ts; the helpers both use are in test/helpers/account.ts.
 */

/** A recording runtime whose `exec` plays the in-container claim agent: it keeps the token it is given. */
class ClaimingRuntime extends RecordingRuntime {
  tokens = new Map<string, string>()
  override async exec(slug: string, cmd: string[] = []): Promise<ExecResult> {
    this.tokens.set(slug, cmd.at(-1)!)
    return { exitCode: 0, output: '' }
  }
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
