import { spawnSync } from 'bun'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, freePort, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * Names on the compiled binary: `dig` (UDP and TCP) against Berth's own DNS server for a real
 * site's records, and the domain flow through the sandbox registrar down to a request with the
 * domain's Host reaching the site's container through the edge.
 */
let berth: Berth
let dnsPort = 0
let key = ''
let slug = ''
let stranger = ''
const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }

/** Runs dig against Berth's DNS server; `args` are dig's (name, type, +options). */
function dig(...args: string[]): { header: string; flags: string[]; status: string; answer: string[]; authority: string[]; text: string } {
  const p = spawnSync(['dig', '@127.0.0.1', '-p', String(dnsPort), '+norecurse', '+time=2', '+tries=1', ...args], { stdout: 'pipe', stderr: 'pipe' })
  const text = p.stdout.toString() + p.stderr.toString()
  const header = /->>HEADER<<- (.*)/.exec(text)?.[1] ?? ''
  const flags = (/;; flags: ([^;]*);/.exec(text)?.[1] ?? '').trim().split(/\s+/)
  const section = (title: string) => {
    const m = new RegExp(`;; ${title} SECTION:\\n([\\s\\S]*?)(?:\\n\\n|$)`).exec(text)
    return m ? m[1]!.split('\n').filter((l) => l && !l.startsWith(';')) : []
  }
  return { header, flags, status: /status: (\w+)/.exec(header)?.[1] ?? '', answer: section('ANSWER'), authority: section('AUTHORITY'), text }
}
const serialOf = (apex: string) => Number(dig(apex, 'SOA').answer[0]!.split(/\s+/)[6])

beforeAll(async () => {
  dnsPort = await freePort()
  berth = await startBerth({ env: { BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_RATE_LIMITS_REGISTER: '100/hour' } })
  instanceOf(berth)
  slug = uniqueSlug('names')
  key = (await buyDirect(berth.url, { slug })).data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
  stranger = (await api(berth.url, 'POST', '/auth/register/', { body: {} })).json.data.api_key
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
})

describe("dig against Berth's DNS", () => {
  const site = () => `${slug}.localhost`
  const create = async (body: Record<string, unknown>) => {
    const res = await api(berth.url, 'POST', `/sites/${slug}/dns/`, { key, body: { action: 'create', ...body } })
    expect(res.status, res.text).toBe(200)
  }

  it('shows the DNS port and nameservers in the status', async () => {
    const status = (await api(berth.url, 'GET', '/status/')).json.data
    expect(status.dns).toEqual({ port: dnsPort, nameservers: ['ns1.localhost', 'ns2.localhost'] })
  })

  it("answers a site's default A with the AA flag, over UDP and TCP", () => {
    for (const transport of [[], ['+tcp']]) {
      const r = dig(site(), 'A', ...transport)
      expect(r.status, r.text).toBe('NOERROR')
      expect(r.flags).toContain('aa')
      expect(r.flags).not.toContain('ra')
      expect(r.answer.map((l) => l.split(/\s+/).pop())).toEqual(['127.0.0.1'])
    }
  })

  it('serves each record type created through the API at once, the SOA serial growing', async () => {
    const records: [Record<string, unknown>, string, string, RegExp][] = [
      [{ type: 'A', subdomain: 'api', value: '203.0.113.7' }, `api.${site()}`, 'A', /\sA\s+203\.0\.113\.7$/],
      [{ type: 'AAAA', subdomain: 'api', value: '2001:db8::7' }, `api.${site()}`, 'AAAA', /\sAAAA\s+2001:db8::7$/],
      [{ type: 'CNAME', subdomain: 'www', value: 'api.example.net' }, `www.${site()}`, 'CNAME', /\sCNAME\s+api\.example\.net\.$/],
      [{ type: 'MX', value: '10 mail.example.net' }, site(), 'MX', /\sMX\s+10 mail\.example\.net\.$/],
      [{ type: 'TXT', subdomain: '_dmarc', value: 'v=DMARC1; p=none' }, `_dmarc.${site()}`, 'TXT', /\sTXT\s+"v=DMARC1; p=none"$/],
      [{ type: 'SRV', subdomain: '_sip._tcp', value: '10 5 5060 sip.example.net' }, `_sip._tcp.${site()}`, 'SRV', /\sSRV\s+10 5 5060 sip\.example\.net\.$/],
    ]
    for (const [body, name, type, line] of records) {
      const before = serialOf('localhost')
      await create(body)
      for (const transport of [[], ['+tcp']]) {
        const r = dig(name, type, ...transport)
        expect(r.status, r.text).toBe('NOERROR')
        expect(r.answer.some((l) => line.test(l)), `${type} ${r.text}`).toBe(true)
      }
      expect(serialOf('localhost')).toBeGreaterThan(before)
    }
  })

  it('answers a mixed-case name, keeping the question as asked', () => {
    const r = dig(`API.${slug.toUpperCase()}.LocalHost`, 'A')
    expect(r.status).toBe('NOERROR')
    expect(r.answer[0]).toMatch(new RegExp(`^API\\.${slug.toUpperCase()}\\.LocalHost\\.`))
    expect(r.answer[0]).toMatch(/203\.0\.113\.7$/)
  })

  it('answers NXDOMAIN and NODATA with the SOA in the authority section, and REFUSED outside its zones', () => {
    const nx = dig(`nothing-here.${site()}`, 'A')
    expect(nx.status).toBe('NXDOMAIN')
    expect(nx.flags).toContain('aa')
    expect(nx.answer).toEqual([])
    expect(nx.authority.join('\n')).toMatch(/^localhost\.\s+\d+\s+IN\s+SOA\s+ns1\.localhost\. hostmaster\.localhost\./)
    const nodata = dig(`api.${site()}`, 'MX')
    expect(nodata.status).toBe('NOERROR')
    expect(nodata.answer).toEqual([])
    expect(nodata.authority.join('\n')).toMatch(/\sSOA\s/)
    const refused = dig('example.org', 'A')
    expect(refused.status).toBe('REFUSED')
    expect(refused.answer).toEqual([])
  })

  it('truncates a TXT answer over 512 bytes over UDP without EDNS, and sends it whole over TCP', async () => {
    const long = `big ${'x'.repeat(900)}`
    await create({ type: 'TXT', subdomain: 'big', value: long })
    const udp = dig(`big.${site()}`, 'TXT', '+noedns', '+ignore')
    expect(udp.flags).toContain('tc')
    const tcp = dig(`big.${site()}`, 'TXT', '+tcp')
    expect(tcp.status).toBe('NOERROR')
    expect(tcp.flags).not.toContain('tc')
    expect(tcp.answer.join('').replace(/" "/g, '').replace(/.*TXT\s+"|"$/g, '')).toBe(long)
  })

  it('refuses AXFR', () => {
    const r = dig('localhost', 'AXFR')
    expect(r.text).toMatch(/Transfer failed|REFUSED/)
    expect(r.text).not.toMatch(/\sSOA\s.*\n[\s\S]*\sSOA\s/)
  })

  it('forgets a deleted record in the next answer', async () => {
    const del = await api(berth.url, 'POST', `/sites/${slug}/dns/`, { key, body: { action: 'delete', type: 'A', subdomain: 'api', value: '203.0.113.7' } })
    expect(del.status).toBe(200)
    expect(dig(`api.${site()}`, 'A').answer).toEqual([])
  })
})

describe('the domain flow', () => {
  const domain = `${uniqueSlug('shop')}.com`

  it('searches, refuses to register without a payment method (402), registers with the one a purchase saved', async () => {
    const search = await api(berth.url, 'GET', `/domains/search/?domain=${domain}`, { key })
    expect(search.status, search.text).toBe(200)
    expect(search.json.data).toMatchObject({ domain, available: true, sandbox: true })
    const unpaid = await api(berth.url, 'POST', '/domains/register/', { key: stranger, body: { domain, period: 1, contact: CONTACT } })
    expect(unpaid.status).toBe(402)
    const reg = await api(berth.url, 'POST', '/domains/register/', { key, body: { domain, period: 1, contact: CONTACT } })
    expect(reg.status, reg.text).toBe(201)
    expect(reg.json.data.status).toBe('pending')
    expect((await api(berth.url, 'GET', '/domains/', { key })).json.data.map((d: { domain: string }) => d.domain)).toEqual([domain])
    // The registration job pays and registers in the background.
    const deadline = Date.now() + 20_000
    while ((await api(berth.url, 'GET', `/domains/${domain}/`, { key })).json.data.status === 'pending' && Date.now() < deadline) await Bun.sleep(50)
    expect((await api(berth.url, 'GET', `/domains/${domain}/`, { key })).json.data).toMatchObject({ domain, status: 'active', linked_site: null })
    // Berth serves the new zone at once.
    const soa = dig(domain, 'SOA')
    expect(soa.status).toBe('NOERROR')
    expect(soa.flags).toContain('aa')
  })

  it('adds a DNS record that dig sees', async () => {
    const add = await api(berth.url, 'POST', `/domains/${domain}/dns/add/`, { key, body: { type: 'TXT', subdomain: '_verify', value: 'token-123' } })
    expect(add.status, add.text).toBe(200)
    expect(dig(`_verify.${domain}`, 'TXT', '+tcp').answer.join('\n')).toMatch(/"token-123"/)
  })

  it("links the domain: its name answers the box, and a request with its Host reaches the site's container", async () => {
    const link = await api(berth.url, 'POST', `/domains/${domain}/link/`, { key, body: { tenant_slug: slug } })
    expect(link.status, link.text).toBe(200)
    expect(dig(domain, 'A').answer.map((l) => l.split(/\s+/).pop())).toEqual(['127.0.0.1'])
    expect(dig(`www.${domain}`, 'A').answer.map((l) => l.split(/\s+/).pop())).toEqual(['127.0.0.1'])
    const marker = `linked-${Math.random().toString(36).slice(2)}`
    const write = await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/index.html', content: `<h1>${marker}</h1>` } })
    expect(write.status, write.text).toBe(200)
    for (const host of [domain, `www.${domain}`]) {
      const res = await fetch(`${berth.url}/`, { headers: { host } })
      expect(res.status, host).toBe(200)
      expect(await res.text(), host).toContain(marker)
    }
    expect((await api(berth.url, 'GET', `/sites/${slug}/`, { key })).json.data.domains).toEqual([domain])
  })

  it('changes settings', async () => {
    const res = await api(berth.url, 'POST', `/domains/${domain}/settings/`, { key, body: { auto_renew: false, locked: false } })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ auto_renew: false, locked: false, privacy: true })
  })

  it("answers another account's key 404 on every domain route", async () => {
    const routes: [string, string, unknown?][] = [
      ['GET', `/domains/${domain}/`], ['GET', `/domains/${domain}/dns/`], ['POST', `/domains/${domain}/dns/add/`, { type: 'A', value: '192.0.2.1' }],
      ['POST', `/domains/${domain}/dns/delete/`, { type: 'TXT', subdomain: '_verify', value: 'token-123' }], ['POST', `/domains/${domain}/link/`, { tenant_slug: null }],
      ['POST', `/domains/${domain}/settings/`, { auto_renew: true }],
    ]
    for (const [method, path, body] of routes) expect((await api(berth.url, method, path, { key: stranger, body })).status, `${method} ${path}`).toBe(404)
    expect(dig(`_verify.${domain}`, 'TXT').answer.join('\n')).toMatch(/"token-123"/)
    const res = await fetch(`${berth.url}/`, { headers: { host: domain } })
    expect(res.status).toBe(200)
  })
})
