import { describe, expect, it } from 'vitest'
import { BerthNames } from './berth-names'

/** Berth's own names (issue 23, part 6): which domains and slugs a tenant may never hold. */
const names = new BerthNames({ sitesDomain: 'Sites.Test', siteUrl: 'https://panel.berth.test:8443', nameservers: ['dns1.sites.test', 'ns.berth-dns.test.'] })

describe('BerthNames', () => {
  it('refuses the sites domain, the site_url host and the nameservers, what is under them and what holds them', () => {
    const refused: [string, RegExp][] = [
      ['sites.test', /^'sites\.test' is the domain sites are served under \(sites\.domain\)/],
      ['victim.sites.test', /^'victim\.sites\.test' is under sites\.test/],
      ['a.b.sites.test', /under sites\.test/],
      ['dns1.sites.test', /under sites\.test/],
      ['panel.berth.test', /^'panel\.berth\.test' is Berth's own host \(the API, server\.site_url\)/],
      ['x.panel.berth.test', /under panel\.berth\.test/],
      ['berth.test', /^'berth\.test' holds panel\.berth\.test/],
      ['ns.berth-dns.test', /is one of Berth's nameservers \(dns\.nameservers\)/],
      ['berth-dns.test', /holds ns\.berth-dns\.test/],
      ['SITES.TEST', /sites domain|sites\.domain/],
    ]
    for (const [name, why] of refused) {
      const problem = names.domainProblem(name)
      expect(problem, name).toMatch(why)
      expect(problem, name).toMatch(/no account may register it, link it to a site or give it DNS records/)
      expect(names.tenantMayHold(name), name).toBe(false)
    }
  })

  it("leaves others' names alone, neighbours and look-alikes included", () => {
    for (const name of ['shop.com', 'mysites.test', 'sites.test.example', 'xpanel.berth.test', 'other.berth.test.com', 'berth-dns.test.org', 'test.com']) {
      expect(names.domainProblem(name), name).toBeUndefined()
      expect(names.tenantMayHold(name), name).toBe(true)
    }
  })

  it('refuses a slug whose site name is a nameserver or the API host, or holds one', () => {
    expect(names.slugProblem('dns1')).toMatch(/^Slug 'dns1' would name dns1\.sites\.test, one of Berth's nameservers \(dns\.nameservers\): it belongs to this hosting service; choose another\.$/)
    const api = new BerthNames({ sitesDomain: 'sites.example', siteUrl: 'https://panel.sites.example', nameservers: ['ns.a.sites.example'] })
    expect(api.slugProblem('panel')).toMatch(/would name panel\.sites\.example, Berth's own host/)
    expect(api.slugProblem('a')).toMatch(/which holds ns\.a\.sites\.example/)
    expect(api.slugProblem('shop')).toBeUndefined()
    expect(names.slugProblem('shop')).toBeUndefined()
  })

  it('does not refuse every site when the API and the sites share one domain, nor count an IP literal as a name', () => {
    const shared = new BerthNames({ sitesDomain: 'example.com', siteUrl: 'https://example.com', nameservers: ['ns1.example.com'] })
    expect(shared.slugProblem('shop')).toBeUndefined()
    expect(shared.domainProblem('shop.example.com')).toMatch(/under example\.com/)
    const ip = new BerthNames({ sitesDomain: 'localhost', siteUrl: 'http://127.0.0.1:8080', nameservers: ['ns1.localhost'] })
    expect(ip.domainProblem('0.0.1')).toBeUndefined()
    expect(ip.domainProblem('shop.localhost')).toMatch(/under localhost/)
  })
})
