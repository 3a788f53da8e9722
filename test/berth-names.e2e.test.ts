import { Database } from 'bun:sqlite'
import { spawnSync } from 'bun'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, freePort, startBerth, type Berth } from './helpers/binary'

/**
 * Berth's own names are not for sale (issue 23, part 6), on the compiled binary with the sandbox
 * registrar: sites under `sites.test`, the API at `panel.berth.test`, nameservers
 * `dns1.sites.test` and `ns.berth-dns.test`. Registering (REST and MCP), searching, naming a
 * site after a nameserver are refused with 422; a domain an older Berth let a tenant register is
 * no longer served by Berth's DNS and gets no records or link. No container is made.
 */
const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
const REFUSED = ['sites.test', 'victim.sites.test', 'Victim.Sites.Test.', 'dns1.sites.test', 'panel.berth.test', 'www.panel.berth.test', 'berth.test', 'ns.berth-dns.test', 'berth-dns.test']

let berth: Berth
let dnsPort = 0
let key = ''
let accountId = ''

function dig(name: string, type: string): { status: string; flags: string[]; text: string } {
  const p = spawnSync(['dig', '@127.0.0.1', '-p', String(dnsPort), '+norecurse', '+time=2', '+tries=1', name, type], { stdout: 'pipe', stderr: 'pipe' })
  const text = p.stdout.toString()
  return { status: /status: (\w+)/.exec(text)?.[1] ?? '', flags: (/;; flags: ([^;]*);/.exec(text)?.[1] ?? '').trim().split(/\s+/), text }
}
const domainRows = () => {
  const db = new Database(join(berth.dataDir, 'berth.db'), { readonly: true })
  try {
    return db.query('SELECT name FROM domains ORDER BY name').all()
  } finally {
    db.close()
  }
}

beforeAll(async () => {
  const port = await freePort()
  dnsPort = await freePort()
  berth = await startBerth({
    port,
    env: { BERTH_SITES_DOMAIN: 'sites.test', BERTH_DNS_NAMESERVERS: 'dns1.sites.test,ns.berth-dns.test', BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_RATE_LIMITS_REGISTER: '100/hour' },
    args: ['--site-url', `http://panel.berth.test:${port}`],
  })
  const reg = await api(berth.url, 'POST', '/auth/register/', { body: {} })
  expect(reg.status, reg.text).toBe(201)
  key = reg.json.data.api_key
  accountId = reg.json.data.account_id
}, 60_000)
afterAll(async () => {
  await berth?.dispose()
})

describe("Berth's own names on the binary", () => {
  it('refuses to register or search the sites domain, the API host, the nameservers and what is under or above them: 422 on domain, before payment', async () => {
    for (const domain of REFUSED) {
      const register = await api(berth.url, 'POST', '/domains/register/', { key, body: { domain, period: 1, contact: CONTACT } })
      expect(register.status, `${domain} ${register.text}`).toBe(422)
      expect(register.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'domain' })
      expect(register.json.error.message).toMatch(/belongs to this hosting service: no account may register it, link it to a site or give it DNS records\. Choose a name of your own/)
      const search = await api(berth.url, 'GET', `/domains/search/?domain=${encodeURIComponent(domain)}`, { key })
      expect(search.status, `${domain} ${search.text}`).toBe(422)
      expect(search.json.error.param).toBe('domain')
    }
    expect(domainRows()).toEqual([])
    // A name of the tenant's own goes on to payment (this account has no card: 402).
    const own = await api(berth.url, 'POST', '/domains/register/', { key, body: { domain: 'my-own-shop.test', period: 1, contact: CONTACT } })
    expect(own.status, own.text).toBe(402)
  })

  it('refuses it through MCP too (the same domain check): register_domain is a VALIDATION_ERROR on domain', async () => {
    const client = new Client({ name: 'berth-e2e', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(new URL(`${berth.url}/mcp/`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }))
    try {
      const result = (await client.callTool({ name: 'register_domain', arguments: { domain: 'victim.sites.test', period: 1, contact: CONTACT } })) as { isError?: boolean; structuredContent?: any }
      expect(result.isError).toBe(true)
      expect(result.structuredContent.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'domain' })
      expect(result.structuredContent.error.message).toMatch(/'victim\.sites\.test' is under sites\.test/)
    } finally {
      await client.close()
    }
    expect(domainRows()).toEqual([])
  })

  it('refuses a site named after a nameserver at checkout', async () => {
    const created = await api(berth.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } })
    const { id, checkout_secret: secret } = created.json.data
    const res = await api(berth.url, 'POST', `/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: 'dns1' } })
    expect(res.status, res.text).toBe(422)
    expect(res.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'requested_slug' })
    expect(res.json.error.message).toMatch(/dns1\.sites\.test, one of Berth's nameservers/)
  })

  it('a domain an older Berth let a tenant register is not served by its DNS, and gets no records or link', async () => {
    await berth.stop()
    const db = new Database(join(berth.dataDir, 'berth.db'))
    const now = Date.now()
    for (const name of ['berth-dns.test', 'victim.sites.test']) {
      db.query(`INSERT INTO domains (id, account_id, name, status, registrar, sandbox, registrar_ref, expires_at, nameservers, site_id, renew_cents, contact, created_at, updated_at)
        VALUES (?, ?, ?, 'active', 'sandbox', 1, 'sb-old', ?, '[]', NULL, 1800, '{}', ?, ?)`).run(crypto.randomUUID(), accountId, name, now + 365 * 86_400_000, now, now)
    }
    db.close()
    await berth.restart()

    const soa = dig('berth-dns.test', 'SOA')
    expect(soa.status, soa.text).toBe('REFUSED')
    expect(dig('www.berth-dns.test', 'A').status).toBe('REFUSED')
    for (const name of ['berth-dns.test', 'victim.sites.test']) {
      const add = await api(berth.url, 'POST', `/domains/${name}/dns/add/`, { key, body: { type: 'A', subdomain: 'ns', value: '203.0.113.66' } })
      expect(add.status, add.text).toBe(422)
      expect(add.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'domain_name' })
      const link = await api(berth.url, 'POST', `/domains/${name}/link/`, { key, body: { tenant_slug: 'anything' } })
      expect(link.status, link.text).toBe(422)
      expect(link.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'domain_name' })
    }
    // Berth's own names still answer as Berth's.
    const ns = dig('ns.berth-dns.test', 'A')
    expect(ns.status).toBe('REFUSED')
    const sites = dig('sites.test', 'SOA')
    expect(sites.status, sites.text).toBe('NOERROR')
    expect(sites.flags).toContain('aa')
    expect(dig('victim.sites.test', 'A').status).toBe('NXDOMAIN')
  }, 60_000)
})
