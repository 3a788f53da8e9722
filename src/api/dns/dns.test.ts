import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'

/**
 * Site DNS records through the API, in-process on a real SQLite store: each type created and
 * served by the zone book at once, idempotence, the CNAME rule, deletes, and a table of bad
 * inputs that change nothing.
 */
const h = inProcess()
afterAll(() => h.close())

let key = ''
let reader = ''
let foreignKey = ''
let slug = ''
let foreign = ''
const name = () => `${slug}.localhost`
const dns = (body: unknown, k = key, s = slug) => h.call('POST', `/api/v1/sites/${s}/dns/`, { key: k, body })
const served = (n: string) => h.services.zones.zoneFor(n)?.lookup(n) ?? null
const serial = () => h.services.zones.serialOf('localhost')!

async function buy(stem: string): Promise<{ key: string; slug: string }> {
  const s = `${stem}-${Math.random().toString(36).slice(2, 8)}`
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': `198.19.${Math.floor(Math.random() * 250)}.1` } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: s } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  return { key: done.json.data.api_key, slug: s }
}

beforeAll(async () => {
  ;({ key, slug } = await buy('dns'))
  ;({ key: foreignKey, slug: foreign } = await buy('dnsother'))
  reader = (await h.call('POST', '/api/v1/keys/create/', { key, body: { name: 'reader', scopes: ['read'] } })).json.data.api_key
  await h.services.jobs.drain()
}, 60_000)

describe('site DNS records', () => {
  it("answers the site's name with the box's address until it sets its own, and lists no records", async () => {
    const zone = await h.call('GET', `/api/v1/sites/${slug}/dns/`, { key })
    expect(zone.status).toBe(200)
    expect(zone.json.data).toEqual({ name: name(), nameservers: ['ns1.localhost', 'ns2.localhost'], records: [], default_addresses: ['127.0.0.1'] })
    expect(served(name())).toEqual([expect.objectContaining({ type: 'A', data: '127.0.0.1' })])
  })

  it('creates each record type, served at once, with the SOA serial growing on every change', async () => {
    const cases = [
      { body: { type: 'A', value: '203.0.113.10' }, at: name(), data: '203.0.113.10' },
      { body: { type: 'AAAA', value: '2001:DB8:0:0::10' }, at: name(), data: '2001:db8::10' },
      { body: { type: 'CNAME', subdomain: 'www', value: 'Shop.Example.COM.' }, at: `www.${name()}`, data: 'shop.example.com' },
      { body: { type: 'MX', value: '10   mail.example.com', ttl: 600 }, at: name(), data: { preference: 10, exchange: 'mail.example.com' } },
      { body: { type: 'TXT', subdomain: '_dmarc', value: `v=DMARC1; p=none; ${'x'.repeat(600)}` }, at: `_dmarc.${name()}`, data: expect.arrayContaining([expect.stringMatching(/^v=DMARC1/)]) },
      { body: { type: 'SRV', subdomain: '_sip._tcp', value: '10 5 5060 sip.example.com' }, at: `_sip._tcp.${name()}`, data: { priority: 10, weight: 5, port: 5060, target: 'sip.example.com' } },
    ]
    for (const c of cases) {
      const before = serial()
      const res = await dns({ action: 'create', ...c.body })
      expect(res.status, res.text).toBe(200)
      expect(res.json.data).toMatchObject({ action: 'create', changed: true, record: { type: c.body.type, name: c.at } })
      expect(served(c.at), c.body.type).toEqual(expect.arrayContaining([expect.objectContaining({ type: c.body.type, data: c.data })]))
      expect(serial()).toBeGreaterThan(before)
    }
    // Its own A replaced the default address; the TXT was split into 255-byte strings.
    expect(served(name())!.filter((r) => r.type === 'A')).toEqual([expect.objectContaining({ data: '203.0.113.10' })])
    const txt = served(`_dmarc.${name()}`)!.find((r) => r.type === 'TXT')!.data as string[]
    expect(txt.length).toBe(3)
    expect(txt.join('')).toMatch(/^v=DMARC1; p=none; x+$/)
    // `_tcp` exists only as the parent of `_sip._tcp`: an empty non-terminal (NODATA, not NXDOMAIN).
    expect(served(`_tcp.${name()}`)).toEqual([])
    expect(served(`_sip.${name()}`)).toBeNull()
    expect(served(`_sip._tcp.${name()}`)).not.toBeNull()
    const listed = (await h.call('GET', `/api/v1/sites/${slug}/dns/`, { key })).json.data.records
    expect(listed.map((r: { type: string }) => r.type).sort()).toEqual(['A', 'AAAA', 'CNAME', 'MX', 'SRV', 'TXT'])
    const site = (await h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data
    expect(site.dns_records).toHaveLength(6)
  })

  it('changes nothing when the same record is created again, and updates only its TTL', async () => {
    const before = serial()
    const again = await dns({ action: 'create', type: 'MX', value: '10 mail.example.com.', ttl: 600 })
    expect(again.json.data.changed).toBe(false)
    expect(serial()).toBe(before)
    const ttl = await dns({ action: 'create', type: 'MX', value: '10 mail.example.com', ttl: 900 })
    expect(ttl.json.data).toMatchObject({ changed: true, record: { ttl: 900 } })
    expect((await h.call('GET', `/api/v1/sites/${slug}/dns/`, { key })).json.data.records.filter((r: { type: string }) => r.type === 'MX')).toHaveLength(1)
  })

  it('keeps a CNAME alone at its name (409 both ways)', async () => {
    const beside = await dns({ action: 'create', type: 'TXT', subdomain: 'www', value: 'hello' })
    expect(beside.status).toBe(409)
    expect(beside.json.error).toMatchObject({ code: 'CONFLICT', param: 'type' })
    expect(beside.json.error.message).toMatch(/is a CNAME.*GET \/sites\/.+\/dns\//)
    const cname = await dns({ action: 'create', type: 'CNAME', value: 'elsewhere.example.com' })
    expect(cname.status).toBe(409)
  })

  it('deletes a record (gone from the next answer), and a missing one is 404', async () => {
    const del = await dns({ action: 'delete', type: 'CNAME', subdomain: 'www', value: 'shop.example.com' })
    expect(del.status, del.text).toBe(200)
    expect(del.json.data).toMatchObject({ action: 'delete', record: { name: `www.${name()}` } })
    expect(served(`www.${name()}`)).toBeNull()
    const again = await dns({ action: 'delete', type: 'CNAME', subdomain: 'www', value: 'shop.example.com' })
    expect(again.status).toBe(404)
    expect(again.json.error.param).toBe('value')
    // Deleting the site's own A brings the default address back.
    expect((await dns({ action: 'delete', type: 'A' })).status).toBe(200)
    expect(served(name())!.filter((r) => r.type === 'A')).toEqual([expect.objectContaining({ data: '127.0.0.1' })])
  })

  it("answers 404 for another account's site and keeps its records apart", async () => {
    const res = await dns({ action: 'create', type: 'A', value: '192.0.2.1' }, key, foreign)
    expect(res.status).toBe(404)
    expect(res.json.error.param).toBe('tenant_slug')
    expect((await h.call('GET', `/api/v1/sites/${foreign}/dns/`, { key })).status).toBe(404)
    expect((await h.call('GET', `/api/v1/sites/${foreign}/dns/`, { key: foreignKey })).json.data.records).toEqual([])
  })
})

describe('site DNS: bad inputs change nothing', () => {
  const rows: { name: string; body?: unknown; raw?: string; as?: 'reader' | 'none'; expect: [number, string, string | null]; says?: RegExp }[] = [
    { name: 'A not an IPv4 address', body: { action: 'create', type: 'A', value: '999.1.1.1' }, expect: [422, 'VALIDATION_ERROR', 'value'], says: /IPv4 address like/ },
    { name: 'A with a leading zero octet', body: { action: 'create', type: 'A', value: '010.1.1.1' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'A with an IPv6 address', body: { action: 'create', type: 'A', value: '2001:db8::1' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'AAAA with an IPv4 address', body: { action: 'create', type: 'AAAA', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'value'], says: /IPv6/ },
    { name: 'AAAA with a zone index', body: { action: 'create', type: 'AAAA', value: 'fe80::1%eth0' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'CNAME not a host name', body: { action: 'create', type: 'CNAME', subdomain: 'a', value: 'not a host' }, expect: [422, 'VALIDATION_ERROR', 'value'], says: /full host name/ },
    { name: 'CNAME to a single label', body: { action: 'create', type: 'CNAME', subdomain: 'a', value: 'localhostonly' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'CNAME to itself', body: { action: 'create', type: 'CNAME', subdomain: 'loop', value: `loop.{name}` }, expect: [422, 'VALIDATION_ERROR', 'value'], says: /its own name/ },
    { name: 'MX without a host', body: { action: 'create', type: 'MX', value: '10' }, expect: [422, 'VALIDATION_ERROR', 'value'], says: /priority host/ },
    { name: 'MX priority not a number', body: { action: 'create', type: 'MX', value: 'ten mail.example.com' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'MX priority over 65535', body: { action: 'create', type: 'MX', value: '70000 mail.example.com' }, expect: [422, 'VALIDATION_ERROR', 'value'], says: /0 to 65535/ },
    { name: 'SRV outside _service._proto', body: { action: 'create', type: 'SRV', subdomain: 'sip', value: '1 1 5060 sip.example.com' }, expect: [422, 'VALIDATION_ERROR', 'subdomain'], says: /_service\._proto/ },
    { name: 'SRV with three fields', body: { action: 'create', type: 'SRV', subdomain: '_sip._tcp', value: '1 1 sip.example.com' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'TXT with a newline', body: { action: 'create', type: 'TXT', value: 'a\nb' }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'TXT of 4001 bytes', body: { action: 'create', type: 'TXT', value: 'x'.repeat(4001) }, expect: [422, 'VALIDATION_ERROR', 'value'] },
    { name: 'value missing on create', body: { action: 'create', type: 'A' }, expect: [422, 'VALIDATION_ERROR', 'value'], says: /required for a A record/ },
    { name: 'ttl 59', body: { action: 'create', type: 'A', value: '192.0.2.1', ttl: 59 }, expect: [422, 'VALIDATION_ERROR', 'ttl'] },
    { name: 'ttl 86401', body: { action: 'create', type: 'A', value: '192.0.2.1', ttl: 86401 }, expect: [422, 'VALIDATION_ERROR', 'ttl'] },
    { name: 'ttl 1.5', body: { action: 'create', type: 'A', value: '192.0.2.1', ttl: 1.5 }, expect: [422, 'VALIDATION_ERROR', 'ttl'] },
    { name: 'ttl as a string', body: { action: 'create', type: 'A', value: '192.0.2.1', ttl: '3600' }, expect: [422, 'VALIDATION_ERROR', 'ttl'] },
    { name: 'type NS', body: { action: 'create', type: 'NS', value: 'ns.example.com' }, expect: [422, 'VALIDATION_ERROR', 'type'] },
    { name: 'type lower-case a', body: { action: 'create', type: 'a', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'type'] },
    { name: 'action update', body: { action: 'update', type: 'A', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'action'] },
    { name: 'action missing', body: { type: 'A', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'action'] },
    { name: 'a wildcard subdomain', body: { action: 'create', type: 'A', subdomain: '*', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'subdomain'], says: /Wildcard/ },
    { name: 'an empty label', body: { action: 'create', type: 'A', subdomain: 'a..b', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'subdomain'] },
    { name: 'a label of 64 characters', body: { action: 'create', type: 'A', subdomain: 'a'.repeat(64), value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'subdomain'] },
    { name: 'the full name as subdomain', body: { action: 'create', type: 'A', subdomain: 'www.{name}', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'subdomain'], says: /send 'www'/ },
    { name: 'a subdomain with a control character', body: { action: 'create', type: 'A', subdomain: 'a\u0007', value: '192.0.2.1' }, expect: [422, 'VALIDATION_ERROR', 'subdomain'] },
    { name: 'an unknown field', body: { action: 'create', type: 'A', value: '192.0.2.1', priority: 1 }, expect: [422, 'VALIDATION_ERROR', 'priority'] },
    { name: 'truncated JSON', raw: '{"action":', expect: [400, 'VALIDATION_ERROR', null] },
    { name: 'delete of a record that is not there', body: { action: 'delete', type: 'TXT', subdomain: 'nothing' }, expect: [404, 'NOT_FOUND', 'type'] },
    { name: 'a read-only key', as: 'reader', body: { action: 'create', type: 'A', value: '192.0.2.1' }, expect: [403, 'FORBIDDEN', null] },
    { name: 'no key', as: 'none', body: { action: 'create', type: 'A', value: '192.0.2.1' }, expect: [401, 'UNAUTHORIZED', null] },
  ]
  const state = () => JSON.stringify([h.services.store.sqlite.query('SELECT * FROM dns_records ORDER BY id').all(), serial()])

  it.each(rows)('$name', async (row) => {
    const before = state()
    const body = row.body === undefined ? undefined : JSON.parse(JSON.stringify(row.body).replaceAll('{name}', name()))
    const res = await h.call('POST', `/api/v1/sites/${slug}/dns/`, { key: row.as === 'reader' ? reader : row.as === 'none' ? undefined : key, body, rawBody: row.raw, headers: row.raw ? { 'content-type': 'application/json' } : {} })
    expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }, res.text).toEqual({ status: row.expect[0], code: row.expect[1], param: row.expect[2] })
    expect(res.json.error.message).toMatch(/\.$/)
    if (row.says) expect(res.json.error.message).toMatch(row.says)
    expect(state()).toBe(before)
  })
})
