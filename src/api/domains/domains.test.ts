import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'

/**
 * Domains through the API, in-process on a real SQLite store with the sandbox registrar and the
 * built-in test processor: search, registration paid with the payment method on file (402
 * without one), the first domain free on an annual plan with free_domain_annual, DNS records
 * served by the zone book, linking (the edge's directory routes the name), settings, renewals,
 * another account's domain not found on every route, and a bad-input table that changes nothing.
 */
const h = inProcess()
afterAll(() => h.close())

const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
const unique = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`

let buyer = ''
let slug = ''
let stranger = ''
let reader = ''
let annual = ''
let domain = ''

async function buy(sku: string): Promise<{ key: string; slug: string }> {
  const s = unique('dom')
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku }, headers: { 'x-forwarded-for': `198.19.${Math.floor(Math.random() * 250)}.2` } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: s } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  return { key: done.json.data.api_key, slug: s }
}
const register = (key: string, body: Record<string, unknown>) => h.call('POST', '/api/v1/domains/register/', { key, body: { period: 1, contact: CONTACT, ...body } })
const tables = () => JSON.stringify(['domains', 'dns_records', 'payments'].map((t) => h.services.store.sqlite.query(`SELECT * FROM ${t} ORDER BY id`).all()))

beforeAll(async () => {
  ;({ key: buyer, slug } = await buy('svc_starter_monthly'))
  ;({ key: annual } = await buy('svc_business_annual'))
  stranger = (await h.register()).key
  reader = (await h.call('POST', '/api/v1/keys/create/', { key: buyer, body: { name: 'reader', scopes: ['read'] } })).json.data.api_key
  await h.services.jobs.drain()
  domain = `${unique('shop')}.com`
}, 60_000)

describe('domains', () => {
  it('searches: available with CAD prices, taken and premium names as the sandbox documents them', async () => {
    const free = await h.call('GET', `/api/v1/domains/search/?domain=${domain.toUpperCase()}`, { key: buyer })
    expect(free.status, free.text).toBe(200)
    expect(free.json.data).toMatchObject({ domain, available: true, premium: false, sandbox: true, first_year_free: false, price: { currency: 'CAD' } })
    expect(free.json.data.price.registration).toBeGreaterThan(0)
    expect((await h.call('GET', '/api/v1/domains/search/?domain=taken.com', { key: buyer })).json.data.available).toBe(false)
    const premium = (await h.call('GET', '/api/v1/domains/search/?domain=premium-shop.com', { key: buyer })).json.data
    expect(premium.premium).toBe(true)
    expect(premium.price.registration).toBeGreaterThan(free.json.data.price.registration)
  })

  it('answers 402 without a payment method on file and registers nothing', async () => {
    const before = tables()
    const res = await register(stranger, { domain: `${unique('nopay')}.com` })
    expect(res.status, res.text).toBe(402)
    expect(res.json.error.code).toBe('PAYMENT_DECLINED')
    expect(res.json.error.message).toMatch(/No payment method on file.*POST \/acp\/checkouts\//)
    expect(tables()).toBe(before)
  })

  it('registers with the method a purchase saved: pending at once, then charged, registered, served by Berth DNS, listed', async () => {
    const price = (await h.call('GET', `/api/v1/domains/search/?domain=${domain}`, { key: buyer })).json.data.price.registration
    const res = await register(buyer, { domain, period: 2 })
    expect(res.status, res.text).toBe(201)
    expect(res.json.data).toMatchObject({ domain, status: 'pending', error: null, expires_at: null, auto_renew: true, locked: true, privacy: true, linked_site: null, sandbox: true, nameservers: ['ns1.localhost', 'ns2.localhost'] })
    expect(res.json.data.charged).toBeCloseTo(price * 2, 2)
    const pending = h.services.store.sqlite.query('SELECT status, idempotency_key FROM payments WHERE checkout_id IS NULL').all()
    expect(pending).toEqual([{ status: 'pending', idempotency_key: expect.stringMatching(new RegExp(`^domain-register:${domain.replace(/\./g, '\\.')}:`)) }])
    const twice = await register(buyer, { domain })
    expect(twice.status).toBe(409)
    expect(twice.json.error.message).toMatch(/being registered/)
    await h.services.jobs.drain()
    const search = (await h.call('GET', `/api/v1/domains/search/?domain=${domain}`, { key: buyer })).json.data
    expect(search.available).toBe(false)
    const got = (await h.call('GET', `/api/v1/domains/${domain}/`, { key: buyer })).json.data
    expect(got).toMatchObject({ domain, status: 'active', error: null })
    expect(new Date(got.expires_at).getTime() - h.clock.now()).toBeGreaterThan(700 * 86_400_000)
    const payment = h.services.store.sqlite.query('SELECT amount_cents, method_label, status FROM payments WHERE checkout_id IS NULL').all() as { amount_cents: number; method_label: string }[]
    expect(payment).toEqual([{ amount_cents: Math.round(res.json.data.charged * 100), method_label: 'visa ending 4242 (test)', status: 'succeeded' }])
    const zone = h.services.zones.zoneFor(domain)!
    expect(zone.apex).toBe(domain)
    expect(zone.lookup(domain)!.map((r) => r.type).sort()).toEqual(['NS', 'NS', 'SOA'])
    expect((await h.call('GET', '/api/v1/domains/', { key: buyer })).json.data.map((d: { domain: string }) => d.domain)).toEqual([domain])
    expect((await h.call('GET', `/api/v1/domains/${domain}/`, { key: buyer })).json.data.domain).toBe(domain)
    const again = await register(buyer, { domain })
    expect(again.status).toBe(409)
    expect(again.json.error.param).toBe('domain')
  })

  it("gives an annual plan with free_domain_annual its first domain's first year free, once", async () => {
    const first = await register(annual, { domain: `${unique('gift')}.ca`, ca_legal_type: 'CCO' })
    expect(first.status, first.text).toBe(201)
    expect(first.json.data.charged).toBe(0)
    const second = await register(annual, { domain: `${unique('paid')}.com` })
    expect(second.status, second.text).toBe(201)
    expect(second.json.data.charged).toBeGreaterThan(0)
    await h.services.jobs.drain()
  })

  it('fails a registration the registrar refuses, with the reason, and refunds it; the name can be registered again', async () => {
    const name = `funds-${unique('dry')}.com`
    const res = await register(buyer, { domain: name })
    expect(res.status, res.text).toBe(201)
    expect(res.json.data.status).toBe('pending')
    await h.services.jobs.drain()
    const failed = (await h.call('GET', `/api/v1/domains/${name}/`, { key: buyer })).json.data
    expect(failed).toMatchObject({ status: 'failed', expires_at: null })
    expect(failed.error).toMatch(/registrar could not take payment.*refunded/)
    const payment = h.services.store.sqlite.query('SELECT status, refund_reason FROM payments WHERE idempotency_key LIKE ?').get(`domain-register:${name}:%`) as { status: string; refund_reason: string }
    expect(payment.status).toBe('refunded')
    const change = await h.call('POST', `/api/v1/domains/${name}/dns/add/`, { key: buyer, body: { type: 'TXT', value: 'x' } })
    expect(change.status).toBe(409)
    expect(change.json.error.message).toMatch(/registration of .* failed.*registerDomain|POST \/domains\/register\//)
    // Registering it again replaces the failed attempt (a new attempt, a new key).
    const again = await register(buyer, { domain: name })
    expect(again.status, again.text).toBe(201)
    await h.services.jobs.drain()
    expect((await h.call('GET', '/api/v1/domains/', { key: buyer })).json.data.filter((d: { domain: string }) => d.domain === name)).toHaveLength(1)
    const attempts = h.services.store.sqlite.query('SELECT status FROM payments WHERE idempotency_key LIKE ?').all(`domain-register:${name}:%`)
    expect(attempts).toEqual([{ status: 'refunded' }, { status: 'refunded' }])
  })

  it('a registration sent before a stop is not sent again: the job asks the registrar and records what it holds', async () => {
    await h.services.jobs.stop()
    const name = `${unique('sent')}.com`
    expect((await register(buyer, { domain: name })).status).toBe(201)
    // The earlier process charged, sent the registration and died before recording either.
    const { id } = h.services.store.sqlite.query('SELECT id FROM domains WHERE name = ?').get(name) as { id: string }
    const held = await h.services.domains.registrarDriver().register({ domain: name, periodYears: 1, contact: CONTACT, nameservers: ['ns1.localhost'], autoRenew: true, privacy: true, locked: true })
    h.services.store.sqlite.run('UPDATE domains SET register_sent_at = ? WHERE id = ?', [h.clock.now(), id])
    h.services.jobs.start()
    await h.services.jobs.drain()
    const got = (await h.call('GET', `/api/v1/domains/${name}/`, { key: buyer })).json.data
    expect(got).toMatchObject({ status: 'active', error: null, expires_at: new Date(held.expiresAt).toISOString() })
    const payments = h.services.store.sqlite.query('SELECT status FROM payments WHERE idempotency_key LIKE ?').all(`domain-register:${name}:%`)
    expect(payments).toEqual([{ status: 'succeeded' }])
  })

  it('fails a registration whose card is declined, charging nothing', async () => {
    const { key } = await buy('svc_starter_monthly')
    const account = h.services.keys.authenticate(key).accountId
    await h.services.subscriptions.paymentMethodChanged(account, 'pm_card_visa_chargeDeclined', 'visa ending 0002 (test)')
    const name = `${unique('declined')}.com`
    expect((await register(key, { domain: name })).status).toBe(201)
    await h.services.jobs.drain()
    const got = (await h.call('GET', `/api/v1/domains/${name}/`, { key })).json.data
    expect(got).toMatchObject({ status: 'failed', expires_at: null })
    expect(got.error).toMatch(/declined/)
    expect((await h.call('GET', `/api/v1/domains/search/?domain=${name}`, { key })).json.data.available).toBe(true)
    const payments = h.services.store.sqlite.query('SELECT status FROM payments WHERE idempotency_key LIKE ?').all(`domain-register:${name}:%`)
    expect(payments).toEqual([{ status: 'failed' }])
  })

  it('adds and deletes DNS records on the domain, served at once', async () => {
    const add = await h.call('POST', `/api/v1/domains/${domain}/dns/add/`, { key: buyer, body: { type: 'TXT', subdomain: '', value: 'v=spf1 -all' } })
    expect(add.status, add.text).toBe(200)
    const zone = h.services.zones.zoneFor(domain)!
    expect(zone.lookup(domain)!.some((r) => r.type === 'TXT')).toBe(true)
    const apexCname = await h.call('POST', `/api/v1/domains/${domain}/dns/add/`, { key: buyer, body: { type: 'CNAME', value: 'elsewhere.example.com' } })
    expect(apexCname.status).toBe(422)
    expect(apexCname.json.error.param).toBe('subdomain')
    const listed = (await h.call('GET', `/api/v1/domains/${domain}/dns/`, { key: buyer })).json.data
    expect(listed).toMatchObject({ name: domain, default_addresses: [], records: [{ type: 'TXT', value: 'v=spf1 -all' }] })
    const del = await h.call('POST', `/api/v1/domains/${domain}/dns/delete/`, { key: buyer, body: { type: 'TXT', value: 'v=spf1 -all' } })
    expect(del.status).toBe(200)
    expect(h.services.zones.zoneFor(domain)!.lookup(domain)!.some((r) => r.type === 'TXT')).toBe(false)
  })

  it('links the domain to a site: its name and www answer the box and route to the site; the site lists it', async () => {
    const link = await h.call('POST', `/api/v1/domains/${domain}/link/`, { key: buyer, body: { tenant_slug: slug } })
    expect(link.status, link.text).toBe(200)
    expect(link.json.data.linked_site).toBe(slug)
    expect(h.services.directory.slugForDomain(domain)).toBe(slug)
    expect(h.services.directory.slugForDomain(`www.${domain}`)).toBe(slug)
    const zone = h.services.zones.zoneFor(domain)!
    expect(zone.lookup(domain)!.find((r) => r.type === 'A')?.data).toBe('127.0.0.1')
    expect(zone.lookup(`www.${domain}`)!.find((r) => r.type === 'A')?.data).toBe('127.0.0.1')
    expect((await h.call('GET', `/api/v1/sites/${slug}/`, { key: buyer })).json.data.domains).toEqual([domain])
    const unlink = await h.call('POST', `/api/v1/domains/${domain}/link/`, { key: buyer, body: { tenant_slug: null } })
    expect(unlink.json.data.linked_site).toBeNull()
    expect(h.services.directory.slugForDomain(domain)).toBeNull()
    expect((await h.call('POST', `/api/v1/domains/${domain}/link/`, { key: buyer, body: { tenant_slug: slug } })).status).toBe(200)
  })

  it('changes settings', async () => {
    const res = await h.call('POST', `/api/v1/domains/${domain}/settings/`, { key: buyer, body: { auto_renew: false, privacy: false } })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ auto_renew: false, privacy: false, locked: true })
    expect((await h.call('POST', `/api/v1/domains/${domain}/settings/`, { key: buyer, body: { auto_renew: true } })).json.data.auto_renew).toBe(true)
  })

  it('renews a domain with auto-renew 30 days before expiry, charging the method on file', async () => {
    const before = (await h.call('GET', `/api/v1/domains/${domain}/`, { key: buyer })).json.data
    const expiry = new Date(before.expires_at).getTime()
    h.clock.set(expiry - 29 * 86_400_000)
    await h.services.renewals.renewDue()
    const after = (await h.call('GET', `/api/v1/domains/${domain}/`, { key: buyer })).json.data
    const added = new Date(after.expires_at).getTime() - expiry
    expect(added).toBeGreaterThanOrEqual(365 * 86_400_000)
    expect(added).toBeLessThanOrEqual(366 * 86_400_000)
    expect(after.renew_error).toBeNull()
    // Nothing more to renew: a second pass changes nothing.
    await h.services.renewals.renewDue()
    expect((await h.call('GET', `/api/v1/domains/${domain}/`, { key: buyer })).json.data.expires_at).toBe(after.expires_at)
  })

  it("answers 404 for another account's domain on every route, and changes nothing", async () => {
    const before = tables()
    const routes: [string, string, unknown?][] = [
      ['GET', `/api/v1/domains/${domain}/`], ['GET', `/api/v1/domains/${domain}/dns/`],
      ['POST', `/api/v1/domains/${domain}/dns/add/`, { type: 'A', value: '192.0.2.1' }], ['POST', `/api/v1/domains/${domain}/dns/delete/`, { type: 'A', value: '192.0.2.1' }],
      ['POST', `/api/v1/domains/${domain}/link/`, { tenant_slug: null }], ['POST', `/api/v1/domains/${domain}/settings/`, { auto_renew: false }],
    ]
    for (const [method, path, body] of routes) {
      const res = await h.call(method, path, { key: stranger, body })
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.json.error.param).toBe('domain_name')
    }
    expect((await h.call('GET', '/api/v1/domains/', { key: stranger })).json.data).toEqual([])
    // A site named in the body that is not the caller's: 422 on the field, an unknown one alike.
    const foreignSite = await h.call('POST', `/api/v1/domains/${domain}/link/`, { key: buyer, body: { tenant_slug: 'no-such-site' } })
    expect(foreignSite.status).toBe(422)
    expect(foreignSite.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'tenant_slug' })
    expect(tables()).toBe(before)
  })
})

describe('domains: bad inputs change nothing', () => {
  const R = '/api/v1/domains/register/'
  const bad: { name: string; method?: string; path?: string; body?: unknown; contact?: Record<string, unknown>; as?: 'reader'; expect: [number, string, string | null]; says?: RegExp }[] = [
    { name: 'register: domain missing', body: { period: 1, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'domain'] },
    { name: 'register: a URL, not a name', body: { domain: 'https://example.com/', period: 1, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'domain'], says: /not a domain name/ },
    { name: 'register: a single label', body: { domain: 'localhost', period: 1, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'domain'] },
    { name: 'register: a label of 64 characters', body: { domain: `${'a'.repeat(64)}.com`, period: 1, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'domain'] },
    { name: 'register: period 0', body: { domain: 'fine-name.com', period: 0, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'period'] },
    { name: 'register: period 11', body: { domain: 'fine-name.com', period: 11, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'period'] },
    { name: 'register: period 1.5', body: { domain: 'fine-name.com', period: 1.5, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'period'] },
    { name: 'register: contact missing', body: { domain: 'fine-name.com', period: 1 }, expect: [422, 'VALIDATION_ERROR', 'contact'] },
    { name: 'register: phone without the dot', body: { domain: 'fine-name.com', period: 1 }, contact: { phone: '+15555551234' }, expect: [422, 'VALIDATION_ERROR', 'contact.phone'], says: /\+1\.5555551234/ },
    { name: 'register: phone with letters', body: { domain: 'fine-name.com', period: 1 }, contact: { phone: '+1.555CALLME' }, expect: [422, 'VALIDATION_ERROR', 'contact.phone'] },
    { name: 'register: email not an address', body: { domain: 'fine-name.com', period: 1 }, contact: { email: 'ada' }, expect: [422, 'VALIDATION_ERROR', 'contact.email'] },
    { name: 'register: first_name empty', body: { domain: 'fine-name.com', period: 1 }, contact: { first_name: '' }, expect: [422, 'VALIDATION_ERROR', 'contact.first_name'] },
    { name: 'register: city with a control character', body: { domain: 'fine-name.com', period: 1 }, contact: { city: 'Tor\u001bonto' }, expect: [422, 'VALIDATION_ERROR', 'contact.city'] },
    { name: 'register: country lower-case', body: { domain: 'fine-name.com', period: 1 }, contact: { country: 'ca' }, expect: [422, 'VALIDATION_ERROR', 'contact.country'] },
    { name: 'register: an unknown contact field', body: { domain: 'fine-name.com', period: 1 }, contact: { fax: '+1.5555550000' }, expect: [422, 'VALIDATION_ERROR', 'contact.fax'] },
    { name: 'register: .ca without a legal type', body: { domain: 'fine-name.ca', period: 1, contact: CONTACT }, expect: [422, 'VALIDATION_ERROR', 'ca_legal_type'], says: /CIRA legal type/ },
    { name: 'register: an unknown legal type', body: { domain: 'fine-name.ca', period: 1, contact: CONTACT, ca_legal_type: 'XYZ' }, expect: [422, 'VALIDATION_ERROR', 'ca_legal_type'] },
    { name: 'register: a taken name', body: { domain: 'taken.com', period: 1, contact: CONTACT }, expect: [409, 'CONFLICT', 'domain'], says: /taken/ },
    { name: 'register: a read-only key', as: 'reader', body: { domain: 'fine-name.com', period: 1, contact: CONTACT }, expect: [403, 'FORBIDDEN', null] },
    { name: 'search: no domain', method: 'GET', path: '/api/v1/domains/search/', expect: [422, 'VALIDATION_ERROR', 'domain'] },
    { name: 'search: not a name', method: 'GET', path: '/api/v1/domains/search/?domain=exa%20mple.com', expect: [422, 'VALIDATION_ERROR', 'domain'] },
    { name: 'search: an unknown query parameter', method: 'GET', path: '/api/v1/domains/search/?domain=a.com&tld=com', expect: [422, 'VALIDATION_ERROR', 'tld'] },
    { name: 'settings: no field', path: `/api/v1/domains/{domain}/settings/`, body: {}, expect: [422, 'VALIDATION_ERROR', null], says: /at least one of/ },
    { name: 'settings: auto_renew a string', path: `/api/v1/domains/{domain}/settings/`, body: { auto_renew: 'yes' }, expect: [422, 'VALIDATION_ERROR', 'auto_renew'] },
    { name: 'link: tenant_slug missing', path: `/api/v1/domains/{domain}/link/`, body: {}, expect: [422, 'VALIDATION_ERROR', 'tenant_slug'] },
    { name: 'dns add: A not an address', path: `/api/v1/domains/{domain}/dns/add/`, body: { type: 'A', value: 'example.com' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'dns add: ttl 0', path: `/api/v1/domains/{domain}/dns/add/`, body: { type: 'A', value: '192.0.2.1', ttl: 0 }, expect: [422, 'VALIDATION_ERROR', 'ttl'] },
    { name: 'an unknown domain', method: 'GET', path: '/api/v1/domains/never-registered.com/', expect: [404, 'NOT_FOUND', 'domain_name'] },
    { name: 'a domain name that is not one', method: 'GET', path: '/api/v1/domains/..%2F..%2Fetc/', expect: [404, 'NOT_FOUND', 'domain_name'] },
  ]

  it.each(bad)('$name', async (row) => {
    const before = tables()
    const body = row.contact ? { ...(row.body as object), contact: { ...CONTACT, ...row.contact } } : row.body
    const res = await h.call(row.method ?? 'POST', (row.path ?? R).replace('{domain}', domain), { key: row.as === 'reader' ? reader : buyer, body })
    expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }, res.text).toEqual({ status: row.expect[0], code: row.expect[1], param: row.expect[2] })
    expect(res.json.error.message).toMatch(/\.$/)
    if (row.says) expect(res.json.error.message).toMatch(row.says)
    expect(tables()).toBe(before)
  })
})
