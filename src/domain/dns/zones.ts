import type { Authority, DnsRecord, Zone } from '../../dns/types'
import type { Clock } from '../../lib/clock'
import type { DnsRecordRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { DnsRepository } from './repository'
import { toDnsRecord } from './records'

export interface ZoneSettings {
  sitesDomain: string
  nameservers: string[]
  publicIpv4: string
  publicIpv6: string | null
}

/** TTLs of what Berth adds itself: NS and SOA change rarely; default addresses may be replaced. */
const NS_TTL = 3600
const DEFAULT_ADDRESS_TTL = 300
/** ACME DNS-01 answers live minutes; a short TTL keeps a retried order from seeing an old value. */
const CHALLENGE_TTL = 10
const SOA_TIMERS = { refresh: 3600, retry: 600, expire: 1_209_600, minimum: 300 }

/** Which default addresses a name gets: IPv4 (A), IPv6 (AAAA). */
interface Families {
  v4: boolean
  v6: boolean
}

interface BuiltZone extends Zone {
  fingerprint: string
}

/**
 * Berth's zones, built from the store (design.md, DNS details): `sites_domain` with every live
 * site's name and records, and every active domain with its records (and, when linked, the
 * site's address at the apex and `www`). The DNS server reads them through `zoneFor`.
 *
 * The zones are rebuilt when the sites, domains or DNS records change (their areas' version,
 * `Store.versionOf`; a rate-limit hit or a job leaves them be), so a change through the API is in the
 * very next answer. A zone's SOA serial grows whenever its content changes: it is the time in
 * seconds, or the last serial plus one when that is not larger (two changes in one second).
 */
export class ZoneBook implements Authority {
  private zones = new Map<string, BuiltZone>()
  private version = -1
  private source: () => number
  private challengeVersion = -1
  private builds = 0

  /**
   * `challenges`: the ACME DNS-01 TXT records of open orders (src/domain/tls/challenges.ts),
   * served in whichever zone holds their name while the order is open.
   */
  constructor(private d: { store: Store; repo: Pick<DnsRepository, 'zoneSources'>; clock: Clock; settings: ZoneSettings; challenges?: { txtRecords(): { name: string; values: string[] }[]; generation(): number } }) {
    this.source = d.store.versionOf(['sites', 'names'])
  }

  zoneFor(name: string): Zone | null {
    this.refresh()
    // Walk up the labels: the longest apex that `name` is or ends with.
    let candidate = name
    for (;;) {
      const zone = this.zones.get(candidate)
      if (zone) return zone
      const dot = candidate.indexOf('.')
      if (dot === -1) return null
      candidate = candidate.slice(dot + 1)
    }
  }

  generation(): number {
    this.refresh()
    return this.builds
  }

  /** The zone's current SOA serial (GET /status/ and tests), or null when Berth has no such zone. */
  serialOf(apex: string): number | null {
    this.refresh()
    return this.zones.get(apex)?.soa.data.serial ?? null
  }

  /** Every zone apex Berth serves. */
  apexes(): string[] {
    this.refresh()
    return [...this.zones.keys()]
  }

  private refresh(): void {
    const version = this.source()
    const challengeVersion = this.d.challenges?.generation() ?? 0
    if (version === this.version && challengeVersion === this.challengeVersion) return
    this.version = version
    this.challengeVersion = challengeVersion
    this.builds++
    const challengeRecords = (this.d.challenges?.txtRecords() ?? []).flatMap(({ name, values }) => values.map((v): DnsRecord => ({ name, type: 'TXT', ttl: CHALLENGE_TTL, data: [v] })))
    const addChallenges = (zone: ZoneContent, others: string[]) => {
      for (const r of challengeRecords) if (inZone(r.name, zone.apex) && !others.some((o) => o !== zone.apex && inZone(o, zone.apex) && inZone(r.name, o))) zone.add(r)
    }
    const { sites, domains, records } = this.d.repo.zoneSources()
    const bySite = group(records.filter((r) => r.siteId !== null), (r) => r.siteId!)
    const byDomain = group(records.filter((r) => r.domainId !== null), (r) => r.domainId!)
    const s = this.d.settings
    const next = new Map<string, BuiltZone>()

    const sitesZone = new ZoneContent(s.sitesDomain)
    this.apexRecords(sitesZone)
    this.addresses(sitesZone, s.sitesDomain)
    for (const ns of s.nameservers) if (inZone(ns, s.sitesDomain) && ns !== s.sitesDomain) this.addresses(sitesZone, ns)
    for (const site of sites) sitesZone.addOwned(`${site.slug}.${s.sitesDomain}`, bySite.get(site.id) ?? [], (name, families) => this.addresses(sitesZone, name, families))
    addChallenges(sitesZone, domains.map((d) => d.name))
    next.set(s.sitesDomain, this.seal(sitesZone))

    for (const domain of domains) {
      if (domain.name === s.sitesDomain || inZone(domain.name, s.sitesDomain)) continue
      const zone = new ZoneContent(domain.name)
      this.apexRecords(zone)
      const own = byDomain.get(domain.id) ?? []
      zone.addOwned(domain.name, own, (name, families) => {
        if (domain.siteId) this.addresses(zone, name, families)
      })
      // A linked domain's `www` answers the site too, unless the agent set records there.
      if (domain.siteId && !own.some((r) => r.subdomain === 'www')) this.addresses(zone, `www.${domain.name}`)
      addChallenges(zone, [])
      next.set(domain.name, this.seal(zone))
    }
    this.zones = next
  }

  private apexRecords(zone: ZoneContent): void {
    for (const ns of this.d.settings.nameservers) zone.add({ name: zone.apex, type: 'NS', ttl: NS_TTL, data: ns })
  }

  private addresses(zone: ZoneContent, name: string, families: Families = { v4: true, v6: true }): void {
    if (families.v4) zone.add({ name, type: 'A', ttl: DEFAULT_ADDRESS_TTL, data: this.d.settings.publicIpv4 })
    if (families.v6 && this.d.settings.publicIpv6) zone.add({ name, type: 'AAAA', ttl: DEFAULT_ADDRESS_TTL, data: this.d.settings.publicIpv6 })
  }

  /** Adds the SOA, with a serial that grows when the zone's content changed since the last build. */
  private seal(content: ZoneContent): BuiltZone {
    const fingerprint = content.fingerprint()
    const previous = this.zones.get(content.apex)
    const seconds = Math.floor(this.d.clock.now() / 1000)
    const serial = !previous ? seconds : previous.fingerprint === fingerprint ? previous.soa.data.serial : Math.max(seconds, previous.soa.data.serial + 1)
    const soa = {
      name: content.apex, type: 'SOA' as const, ttl: NS_TTL,
      data: { mname: this.d.settings.nameservers[0]!, rname: `hostmaster.${content.apex}`, serial: serial >>> 0, ...SOA_TIMERS },
    }
    content.add(soa)
    return { apex: content.apex, soa, fingerprint, lookup: (name) => content.lookup(name) }
  }
}

/** The records of one zone by name, and the names that exist only because names below them do. */
class ZoneContent {
  private names = new Map<string, DnsRecord[]>()
  private nonTerminals = new Set<string>()

  constructor(readonly apex: string) {}

  add(record: DnsRecord): void {
    const list = this.names.get(record.name)
    if (list) list.push(record)
    else this.names.set(record.name, [record])
    for (let n = record.name; n !== this.apex && n.includes('.'); ) {
      n = n.slice(n.indexOf('.') + 1)
      if (n === this.apex || this.names.has(n)) break
      this.nonTerminals.add(n)
    }
  }

  /**
   * The records an owner (a site's name, a domain) created under `owner`, plus its default
   * addresses at the owner's name when it set no A, AAAA or CNAME there itself.
   */
  addOwned(owner: string, rows: DnsRecordRow[], defaults: (name: string, families: Families) => void): void {
    for (const r of rows) this.add(toDnsRecord(r.type, r.value, r.subdomain ? `${r.subdomain}.${owner}` : owner, r.ttl))
    const own = new Set(rows.filter((r) => r.subdomain === '').map((r) => r.type))
    // An own A replaces the default IPv4 only, an own AAAA the IPv6 only; a CNAME both.
    if (own.has('CNAME')) return
    const families = { v4: !own.has('A'), v6: !own.has('AAAA') }
    if (families.v4 || families.v6) defaults(owner, families)
  }

  lookup(name: string): DnsRecord[] | null {
    return this.names.get(name) ?? (this.nonTerminals.has(name) ? [] : null)
  }

  /** The content as text, to tell whether the zone changed (the SOA is added after). */
  fingerprint(): string {
    return JSON.stringify([...this.names.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  }
}

function group<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>()
  for (const item of items) {
    const k = key(item)
    const list = out.get(k)
    if (list) list.push(item)
    else out.set(k, [item])
  }
  return out
}

/** True when `name` is `apex` or below it. */
export const inZone = (name: string, apex: string) => name === apex || name.endsWith(`.${apex}`)
