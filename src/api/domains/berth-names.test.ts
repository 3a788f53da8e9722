import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'

/**
 * Berth's own names are not for sale (issue 23, part 6), in-process with the sandbox registrar:
 * the sites domain, the site_url host and the nameservers' names (and what is under or above
 * them) are refused wherever a tenant names a domain or a slug, and a row that holds one from
 * before (an older Berth, or a config that named it since) is neither served nor changed.
 */
const h = inProcess({
  env: { BERTH_SITES_DOMAIN: 'sites.test', BERTH_DNS_NAMESERVERS: 'dns1.sites.test,ns.berth-dns.test' },
  flags: { 'server.site_url': 'https://panel.berth.test' },
})
afterAll(() => h.close())

const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
const REFUSED = ['sites.test', 'victim.sites.test', 'SITES.TEST.', 'dns1.sites.test', 'panel.berth.test', 'api.panel.berth.test', 'berth.test', 'ns.berth-dns.test', 'berth-dns.test']
const tables = () => JSON.stringify(['domains', 'dns_records', 'payments', 'jobs'].map((t) => h.services.store.sqlite.query(`SELECT * FROM ${t} ORDER BY id`).all()))

let key = ''
let accountId = ''
let slug = ''

/** A paid site (and a card on file) through the built-in processor. */
async function buy(): Promise<void> {
  slug = `own-${Math.random().toString(36).slice(2, 8)}`
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  key = done.json.data.api_key
  accountId = (h.services.store.sqlite.query('SELECT account_id FROM sites WHERE slug = ?').get(slug) as { account_id: string }).account_id
}

/** A domain row as an older Berth would have left it: active, linked to the site when `linked`. */
function oldRow(name: string, linked: boolean): void {
  const siteId = linked ? (h.services.store.sqlite.query('SELECT id FROM sites WHERE slug = ?').get(slug) as { id: string }).id : null
  const now = h.clock.now()
  h.services.store.write(() => h.services.store.sqlite.query(
    `INSERT INTO domains (id, account_id, name, status, registrar, sandbox, registrar_ref, expires_at, nameservers, site_id, renew_cents, contact, created_at, updated_at)
     VALUES (?, ?, ?, 'active', 'sandbox', 1, 'sb-old', ?, '[]', ?, 1800, '{}', ?, ?)`,
  ).run(crypto.randomUUID(), accountId, name, now + 365 * 86_400_000, siteId, now, now))
}

beforeAll(async () => {
  await buy()
  await h.services.jobs.drain()
}, 60_000)

describe("Berth's own names", () => {
  it('refuses to search or register them: 422 on domain, saying why and what to do, nothing recorded or charged', async () => {
    const before = tables()
    for (const domain of REFUSED) {
      for (const res of [
        await h.call('POST', '/api/v1/domains/register/', { key, body: { domain, period: 1, contact: CONTACT } }),
        await h.call('GET', `/api/v1/domains/search/?domain=${encodeURIComponent(domain)}`, { key }),
      ]) {
        expect(res.status, `${domain} ${res.text}`).toBe(422)
        expect(res.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'domain' })
        expect(res.json.error.message, domain).toMatch(/belongs to this hosting service: no account may register it, link it to a site or give it DNS records\. Choose a name of your own \(GET \/domains\/search\/ tells which are free\)\.$/)
      }
    }
    expect(tables()).toBe(before)
    // The same account registers a name of its own.
    const own = await h.call('POST', '/api/v1/domains/register/', { key, body: { domain: 'sites-test-shop.com', period: 1, contact: CONTACT } })
    expect(own.status, own.text).toBe(201)
  })

  it('refuses a slug whose site name is a nameserver, at checkout and for a new site', async () => {
    const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } })
    const { id, checkout_secret: secret } = created.json.data
    const res = await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: 'dns1' } })
    expect(res.status, res.text).toBe(422)
    expect(res.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'requested_slug' })
    expect(res.json.error.message).toBe("Slug 'dns1' would name dns1.sites.test, one of Berth's nameservers (dns.nameservers): it belongs to this hosting service; choose another.")
    const create = await h.call('POST', '/api/v1/sites/create/', { key, body: { slug: 'dns1' } })
    expect(create.status, create.text).toBe(422)
    expect(create.json.error.param).toBe('slug')
  })

  it('a row from before that holds one is not served (edge, DNS, certificates), gets no records or link, and can be unlinked and cleaned', async () => {
    oldRow('sites.test', true)
    oldRow('berth-dns.test', true)
    for (const name of ['sites.test', 'www.sites.test', 'berth-dns.test', 'www.berth-dns.test']) expect(h.services.directory.slugForDomain(name), name).toBeNull()
    expect(h.services.zones.apexes()).not.toContain('berth-dns.test')
    expect(h.services.zones.zoneFor('www.berth-dns.test')).toBeNull()
    expect(h.services.certs.wanted().flatMap((w) => w.names)).not.toContain('berth-dns.test')

    const before = tables()
    for (const name of ['sites.test', 'berth-dns.test']) {
      const add = await h.call('POST', `/api/v1/domains/${name}/dns/add/`, { key, body: { type: 'A', value: '203.0.113.9' } })
      expect(add.status, add.text).toBe(422)
      expect(add.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'domain_name' })
      expect(add.json.error.message).toMatch(/belongs to this hosting service/)
      const link = await h.call('POST', `/api/v1/domains/${name}/link/`, { key, body: { tenant_slug: slug } })
      expect(link.status, link.text).toBe(422)
      expect(link.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'domain_name' })
    }
    expect(tables()).toBe(before)
    const unlink = await h.call('POST', '/api/v1/domains/sites.test/link/', { key, body: { tenant_slug: null } })
    expect(unlink.status, unlink.text).toBe(200)
    expect(unlink.json.data.linked_site).toBeNull()
  })
})
