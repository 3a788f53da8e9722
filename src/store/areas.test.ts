import { describe, expect, it } from 'vitest'
import { domainStore } from '../../test/helpers/domain-store'
import { DnsRepository } from '../domain/dns/repository'
import { ZoneBook } from '../domain/dns/zones'
import { RateLimiter } from '../domain/rate-limits/service'
import { SiteDirectory } from '../domain/sites/directory'
import { SitesRepository } from '../domain/sites/repository'
import { areasWrittenBy } from './areas'

/**
 * Each write moves the version of the area it touches, and each cache reads only the areas it is
 * made from: a rate-limit hit (a write on many API requests) no longer throws away the DNS zones
 * or the edge's site directory, while a change to a site still shows at once. On a real store.
 */
function setup() {
  const t = domainStore()
  const sites = new SitesRepository(t.store)
  const limiter = new RateLimiter(t.store, t.clock, { register: { limit: 100, windowSeconds: 3600 } })
  const accountId = t.account()
  const site = sites.insert({ id: crypto.randomUUID(), accountId, subscriptionId: null, slug: 'shop', planSlug: 'starter', createdAt: t.clock.now() })
  sites.setStatus(site.id, 'active', t.clock.now())
  return { ...t, sites, limiter, site }
}

describe('versions by area', () => {
  it('a rate-limit hit leaves the DNS zones built; a site change rebuilds them', () => {
    const t = setup()
    const zones = new ZoneBook({
      store: t.store, repo: new DnsRepository(t.store), clock: t.clock,
      settings: { sitesDomain: 'sites.example', nameservers: ['ns1.example'], publicIpv4: '192.0.2.1', publicIpv6: null },
    })
    expect(zones.zoneFor('shop.sites.example')).not.toBeNull()
    const built = zones.generation()
    expect(t.limiter.hit('register', '198.51.100.7').allowed).toBe(true)
    t.limiter.prune()
    expect(zones.generation()).toBe(built)
    t.sites.setStatus(t.site.id, 'deleted', t.clock.now())
    expect(zones.generation()).toBe(built + 1)
  })

  it('a rate-limit hit leaves the site directory cached; a site change is seen on the next request', () => {
    const t = setup()
    let reads = 0
    const directory = new SiteDirectory({
      store: t.store,
      sites: { findLiveBySlug: (slug) => (reads++, t.sites.findLiveBySlug(slug)), find: (id) => t.sites.find(id) },
      runner: { knownEndpoint: () => ({ address: '10.0.0.2', port: 80 }) as never, endpointOf: async () => null },
      domains: { linked: () => [] },
    })
    expect(directory.resolve('shop')).toMatchObject({ state: 'serving' })
    t.limiter.hit('register', '198.51.100.7')
    expect(directory.resolve('shop')).toMatchObject({ state: 'serving' })
    expect(reads).toBe(1)
    t.sites.setStatus(t.site.id, 'suspended', t.clock.now())
    expect(directory.resolve('shop')).toMatchObject({ state: 'suspended' })
    expect(reads).toBe(2)
  })

  it("moves an area's version when a statement writes one of its tables, once the transaction ends", () => {
    const t = setup()
    const sites = t.store.versionOf(['sites'])
    const limits = t.store.versionOf(['rate_limits'])
    const both = t.store.versionOf(['sites', 'rate_limits'])
    const [s0, l0, b0] = [sites(), limits(), both()]
    t.limiter.hit('register', '198.51.100.7')
    expect([sites(), limits() > l0, both() > b0]).toEqual([s0, true, true])
    const [s1, b1] = [sites(), both()]
    t.store.write(() => {
      t.sites.setStatus(t.site.id, 'suspended', t.clock.now())
      // Inside the transaction nothing moved yet: what a cache reads now is dropped after.
      expect(sites()).toBe(s1)
    })
    expect(sites()).toBeGreaterThan(s1)
    expect(both()).toBeGreaterThan(b1)
  })

  it('places a statement by the table it writes; a read is no write, and what it cannot place moves every area', () => {
    expect(areasWrittenBy('select "id" from "sites" where "slug" = ?')).toBe(0)
    expect(areasWrittenBy('PRAGMA data_version')).toBe(0)
    const sites = areasWrittenBy('update "sites" set "status" = ? where "id" = ?')
    expect(sites).not.toBe(0)
    expect(areasWrittenBy('insert into "sites" ("id") values (?)')).toBe(sites)
    expect(areasWrittenBy('\n  DELETE FROM sites WHERE id = ?')).toBe(sites)
    const limits = areasWrittenBy('INSERT INTO rate_limit_hits (bucket, client, at, expires_at) VALUES (?, ?, ?, ?)')
    expect(limits & sites).toBe(0)
    expect(areasWrittenBy('INSERT OR IGNORE INTO dns_records (id) VALUES (?)') & (sites | limits)).toBe(0)
    const all = areasWrittenBy('CREATE TABLE later (id TEXT)')
    expect(all & sites && all & limits).toBeTruthy()
    expect(areasWrittenBy('insert into "a_new_table" ("id") values (?)')).toBe(all)
    expect(areasWrittenBy('WITH x AS (SELECT 1) UPDATE sites SET status = ?')).toBe(all)
  })
})
