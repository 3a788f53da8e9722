import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../test/helpers/in-process'
import { ArchivesRepository } from '../domain/archives/repository'
import { BillingRepository } from '../domain/billing/repository'
import { DeploymentsRepository } from '../domain/deployments/repository'
import { KEPT_DEPLOYMENTS } from '../domain/deployments/service'
import { DnsRepository } from '../domain/dns/repository'
import { DomainsRepository } from '../domain/domains/repository'
import { APPLY_JOBS } from '../domain/sites/apply'
import { SitesRepository } from '../domain/sites/repository'
import { CertificatesRepository } from '../domain/tls/repository'
import { AREAS } from '../store/areas'

/**
 * A list costs the same few queries whatever its length (issue 22, part 8): each list route is
 * called for an account holding one row and for one holding many, every row carrying what its
 * view shows from other tables (linked domains, DNS records, certificates, a pending change, a
 * subscription's sites), and the SQL statements each request runs are counted.
 *
 * HTTPS is configured (a CA that is never asked: nothing starts the certificate manager here) so
 * that views read certificates, as they do in production.
 */
const h = inProcess({ env: { BERTH_TLS_LISTEN: '127.0.0.1:8443', BERTH_TLS_ACME_DIRECTORY: 'http://127.0.0.1:9/directory', BERTH_TLS_ACME_EMAIL: 'ops@example.com', BERTH_TLS_ACME_TERMS_AGREED: 'true' } })
afterAll(() => h.close())

const MANY = 25
const SITES_PER_SUBSCRIPTION = 10

interface Account {
  key: string
  /** The slug of its first site (the one holding the snapshots and deployments). */
  slug: string
}
let one: Account
let many: Account

/**
 * An account with `count` active sites under agency subscriptions (10 a subscription), through
 * the repositories. Each site has a DNS record, a linked domain, a certificate for both, and a
 * scale being applied; the first site has `count` snapshots and deployments.
 */
async function seed(count: number): Promise<Account> {
  const { store, clock } = h.services
  const [sites, billing, domains, dns, certs, archives, deployments] = [new SitesRepository(store), new BillingRepository(store), new DomainsRepository(store), new DnsRepository(store), new CertificatesRepository(store), new ArchivesRepository(store), new DeploymentsRepository(store)]
  const { key, accountId } = await h.register()
  const now = clock.now()
  const stem = `l${count}-${Math.random().toString(36).slice(2, 7)}`
  const slugs: string[] = []
  store.write(() => {
    let subscriptionId = ''
    for (let i = 0; i < count; i++) {
      if (i % SITES_PER_SUBSCRIPTION === 0) {
        subscriptionId = billing.insertSubscription({ id: crypto.randomUUID(), accountId, planSlug: 'agency', billingPeriod: 'monthly', status: 'active', currentPeriodEnd: now + 30 * 86_400_000, amountCents: 3900, processor: 'local', createdAt: now + i, updatedAt: now }).id
      }
      const slug = `${stem}-${i}`
      slugs.push(slug)
      const site = sites.insert({ id: crypto.randomUUID(), accountId, subscriptionId, slug, planSlug: 'agency', createdAt: now + i })
      sites.setStatus(site.id, 'active', now)
      dns.insert({ siteId: site.id }, { type: 'TXT', subdomain: '', value: '"v=spf1 -all"', ttl: 3600 }, now)
      const domainId = crypto.randomUUID()
      domains.insert({
        id: domainId, accountId, name: `${slug}.com`, status: 'active', registrar: 'sandbox', sandbox: true, registrarRef: slug, expiresAt: now + 365 * 86_400_000,
        autoRenew: true, locked: true, privacy: true, nameservers: '["ns1.localhost"]', siteId: site.id, renewCents: 1800, freeFirstYear: false, contact: '{}',
        caLegalType: null, renewError: null, createdAt: now + i, updatedAt: now,
      })
      for (const [subject, names] of [[`site:${site.id}`, [`${slug}.localhost`]], [`domain:${domainId}`, [`${slug}.com`, `www.${slug}.com`]]] as const) {
        certs.insert({ id: crypto.randomUUID(), subject, names: JSON.stringify(names), challenge: 'http-01', status: 'active', serial: '01', notBefore: now, notAfter: now + 90 * 86_400_000, renewAt: null, lastError: null, failures: 0, nextAttemptAt: now + 60 * 86_400_000, createdAt: now, updatedAt: now })
      }
      h.services.jobs.enqueue(APPLY_JOBS.scale, site.id)
    }
    const first = sites.findLiveBySlug(slugs[0]!)!
    for (let i = 0; i < count; i++) {
      archives.insert({ id: crypto.randomUUID(), siteId: first.id, kind: 'snapshot', storageKey: `${first.id}/${i}`, createdAt: now + i })
      deployments.insert({ id: crypto.randomUUID(), siteId: first.id, createdAt: now + i })
    }
  })
  for (let i = 1; i < count; i++) await h.call('POST', '/api/v1/keys/create/', { key, body: { name: `key ${i}` } })
  return { key, slug: slugs[0]! }
}

/**
 * Every statement prepared on the store's connection from here on counts its executions: the
 * lists' reads are prepared on first use and kept, drizzle's other queries are prepared per call.
 * (A bun:sqlite statement holds its methods itself, so they are wrapped on each statement.)
 */
let executed = 0
const counted = new WeakSet<object>()
function counting<S extends object>(statement: S): S {
  if (counted.has(statement)) return statement
  counted.add(statement)
  const methods = statement as unknown as Record<string, (...args: unknown[]) => unknown>
  for (const name of ['all', 'get', 'run', 'values', 'iterate']) {
    const original = methods[name]!
    methods[name] = (...args: unknown[]) => {
      executed++
      return original.apply(statement, args)
    }
  }
  return statement
}
const sqlite = h.services.store.sqlite
const { prepare, query } = sqlite
sqlite.prepare = ((...args: Parameters<typeof prepare>) => counting(prepare.apply(sqlite, args))) as typeof prepare
sqlite.query = ((...args: Parameters<typeof query>) => counting(query.apply(sqlite, args))) as typeof query

/** The statements executed while `fn` runs. */
async function statementsDuring(fn: () => Promise<unknown>): Promise<number> {
  const before = executed
  await fn()
  return executed - before
}

/** A write naming a table of every area (changing no row): every area's version moves. */
const touchEveryArea = () => h.services.store.write(() => {
  for (const [table] of Object.values(AREAS)) sqlite.run(`UPDATE ${table} SET rowid = rowid WHERE 0`)
})

/**
 * The answer's data and the statements the request ran, the store having just changed (a write
 * to every area moves their versions): the answer is made afresh, not taken from a cache
 * (GET /sites/'s, the keys').
 */
async function listed(account: Account, path: string): Promise<{ data: any[]; statements: number }> {
  const get = () => h.call('GET', path.replace('{slug}', account.slug), { key: account.key })
  touchEveryArea()
  let data: any[] = []
  const statements = await statementsDuring(async () => {
    const res = await get()
    expect(res.status, res.text).toBe(200)
    data = res.json.data
  })
  // A fresh answer reads at least its rows: the counting itself works.
  expect(statements).toBeGreaterThan(0)
  return { data, statements }
}

beforeAll(async () => {
  one = await seed(1)
  many = await seed(MANY)
}, 60_000)

describe('a list costs the same queries for 1 row as for many', () => {
  it('sites: linked domains, DNS records, certificates and pending changes read once for the list', async () => {
    // The plan catalog is read on first use and kept until a plan changes, not at every write.
    await listed(one, '/api/v1/sites/')
    const small = await listed(one, '/api/v1/sites/')
    const large = await listed(many, '/api/v1/sites/')
    expect(small.data).toHaveLength(1)
    expect(large.data).toHaveLength(MANY)
    for (const site of large.data) {
      expect(site.domains).toEqual([`${site.slug}.com`])
      expect(site.dns_records).toMatchObject([{ type: 'TXT', value: '"v=spf1 -all"' }])
      expect(site.tls).toMatchObject({ status: 'active', names: [`${site.slug}.localhost`] })
      expect(site.applying).toBe('scale')
    }
    expect(large.statements).toBe(small.statements)
    // The sites, their linked domains, DNS records, certificates and pending changes, and the
    // moves under way (MarkedMoves, read again when the jobs area moved: the scales here did).
    expect(large.statements).toBeLessThanOrEqual(6)
    // The single site's view takes the same path, plus its disk's figures (none in the recording runtime) and its databases (none).
    const single = await listed(many, `/api/v1/sites/${large.data[3].slug}/`)
    expect(single.data).toEqual({ ...large.data[3], usage: { disk_bytes: null, disk_limit_bytes: null }, warnings: [], app: null, databases: [] })
  })

  it('sites: a list read again while nothing changed runs no query; a change shows at once', async () => {
    const before = await listed(many, '/api/v1/sites/')
    let again: any
    expect(await statementsDuring(async () => {
      again = await h.call('GET', '/api/v1/sites/', { key: many.key })
    })).toBe(0)
    expect(again.json.data).toEqual(before.data)
    expect(again.json.meta.request_id).toBe(again.headers.get('x-request-id'))
    const slug = before.data[4].slug
    const added = await h.call('POST', `/api/v1/sites/${slug}/dns/`, { key: many.key, body: { action: 'create', type: 'A', subdomain: 'www', value: '192.0.2.7' } })
    expect(added.status, added.text).toBe(200)
    const after = (await h.call('GET', '/api/v1/sites/', { key: many.key })).json.data
    expect(after.find((s: { slug: string }) => s.slug === slug).dns_records.map((r: { value: string }) => r.value)).toContain('192.0.2.7')
    // Another account's list is its own.
    expect((await h.call('GET', '/api/v1/sites/', { key: one.key })).json.data.map((s: { slug: string }) => s.slug)).toEqual([one.slug])
  })

  it('domains: linked sites and certificates read once for the list', async () => {
    const small = await listed(one, '/api/v1/domains/')
    const large = await listed(many, '/api/v1/domains/')
    expect(small.data).toHaveLength(1)
    expect(large.data).toHaveLength(MANY)
    for (const d of large.data) {
      expect(d.linked_site).toBe(d.domain.replace(/\.com$/, ''))
      expect(d.tls).toMatchObject({ status: 'active', names: [d.domain, `www.${d.domain}`] })
    }
    expect(large.statements).toBe(small.statements)
    expect((await listed(many, `/api/v1/domains/${large.data[2].domain}/`)).data).toEqual(large.data[2])
  })

  it("subscriptions: every subscription's sites read once for the list", async () => {
    const small = await listed(one, '/api/v1/account/subscriptions/')
    const large = await listed(many, '/api/v1/account/subscriptions/')
    expect(small.data).toHaveLength(1)
    expect(large.data).toHaveLength(Math.ceil(MANY / SITES_PER_SUBSCRIPTION))
    expect(large.data.flatMap((s: { sites: string[] }) => s.sites).sort()).toEqual((await listed(many, '/api/v1/sites/')).data.map((s: { slug: string }) => s.slug).sort())
    expect(large.statements).toBe(small.statements)
  })

  it.each([
    ['keys', '/api/v1/keys/', MANY],
    ['snapshots', '/api/v1/sites/{slug}/snapshots/', MANY],
    ['deployments', '/api/v1/sites/{slug}/deployments/', Math.min(MANY, KEPT_DEPLOYMENTS)],
  ])('%s', async (_name, path, length) => {
    const small = await listed(one, path)
    const large = await listed(many, path)
    expect(small.data).toHaveLength(1)
    expect(large.data).toHaveLength(length)
    expect(large.statements).toBe(small.statements)
  })
})
