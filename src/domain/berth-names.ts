import { inZone } from './dns'

/** One of Berth's own names and what it is, as a message tells the tenant. */
interface OwnName {
  name: string
  what: string
}

/**
 * Berth's own host names (issue 23, part 6): `sites.domain`, the host of `server.site_url` and
 * the nameservers' names (`dns.nameservers`). They are the hoster's, never a tenant's:
 *
 * - a domain (registered, linked to a site, given DNS records) may not be one of them, under one
 *   (`victim.sites.example` would be served as a tenant's zone and, once linked, the edge's
 *   fallback would route it to a tenant) or above one (the zone of `example.com` holds
 *   `berth.example.com`, and whoever holds its delegation holds Berth's name);
 * - a site's name `{slug}.{sites.domain}` may not be one of them or above one (a site called
 *   `panel` under `sites.example` would own the records of `panel.sites.example`, the API's host).
 *
 * Names compare as the DNS does: lower-case, without a trailing dot. An IP literal as the
 * site_url host names nothing a tenant could hold, and is left out.
 *
 * @example
 * const names = new BerthNames({ sitesDomain: 'sites.example', siteUrl: 'https://panel.example', nameservers: ['ns1.sites.example'] })
 * names.domainProblem('shop.sites.example') // "'shop.sites.example' is under sites.example, ..."
 * names.domainProblem('shop.com')           // undefined
 */
export class BerthNames {
  private readonly own: OwnName[]
  private readonly sitesDomain: string

  constructor(o: { sitesDomain: string; siteUrl: string; nameservers: readonly string[] }) {
    this.sitesDomain = canonical(o.sitesDomain)
    const own: OwnName[] = [{ name: this.sitesDomain, what: 'the domain sites are served under (sites.domain)' }]
    const siteHost = canonical(new URL(o.siteUrl).hostname)
    if (!isIpLiteral(siteHost)) own.push({ name: siteHost, what: "Berth's own host (the API, server.site_url)" })
    for (const ns of o.nameservers) own.push({ name: canonical(ns), what: "one of Berth's nameservers (dns.nameservers)" })
    this.own = own
  }

  /**
   * Why a tenant may not hold `domain` (a normalized name) as a domain of its own, or undefined
   * when it may: it is, is under, or is above one of Berth's names.
   */
  domainProblem(domain: string): string | undefined {
    const name = canonical(domain)
    const refused = 'which belongs to this hosting service: no account may register it, link it to a site or give it DNS records'
    for (const own of this.own) {
      if (name === own.name) return `'${domain}' is ${own.what}, ${refused}.`
      if (inZone(name, own.name)) return `'${domain}' is under ${own.name}, ${own.what}, ${refused}.`
      if (inZone(own.name, name)) return `'${domain}' holds ${own.name}, ${own.what}, ${refused}.`
    }
    return undefined
  }

  /** True when a tenant may hold `domain`; what serves tenants' domains (zones, the edge, certificates) skips the others. */
  tenantMayHold(domain: string): boolean {
    return this.domainProblem(domain) === undefined
  }

  /**
   * Why a site may not be called `slug` (its name `{slug}.{sites.domain}` is one of Berth's names
   * or above one), or undefined.
   */
  slugProblem(slug: string): string | undefined {
    const name = `${slug}.${this.sitesDomain}`
    const clash = this.own.find((own) => own.name !== this.sitesDomain && inZone(own.name, name))
    if (!clash) return undefined
    const what = clash.name === name ? clash.what : `which holds ${clash.name}, ${clash.what}`
    return `Slug '${slug}' would name ${name}, ${what}: it belongs to this hosting service; choose another.`
  }
}

const canonical = (name: string) => name.trim().toLowerCase().replace(/\.$/, '')

/** `127.0.0.1`, `[::1]` (URL.hostname keeps the brackets): not a DNS name. */
const isIpLiteral = (host: string) => host.startsWith('[') || /^\d{1,3}(\.\d{1,3}){3}$/.test(host)
