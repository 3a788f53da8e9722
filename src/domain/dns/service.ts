import { iso, type Clock } from '../../lib/clock'
import type { DnsRecordRow, DomainRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, invalid, notFound, op, say, type OperationRef } from '../errors'
import { checkRecord, checkSubdomain, type RecordInput } from './records'
import type { DnsRepository, RecordOwner, SiteRecordRow } from './repository'
import type { DnsChangeView, DnsRecordView, DnsZone } from './views'
import type { ZoneSettings } from './zones'

/** Most records one site or domain may hold. */
export const MAX_RECORDS = 200

/** Where records live and how messages name the owner's record listing. */
interface Owner {
  key: RecordOwner
  name: string
  listOp: OperationRef
  /** Whether the name answers the box's addresses by default (sites always; domains when linked). */
  hasDefaults: boolean
  /** Domains may not put a CNAME at their apex (it would sit beside the SOA and NS). */
  apexCnameAllowed: boolean
}

/**
 * DNS records under a site's own name (`POST /sites/{slug}/dns/`) and under a domain's: checked
 * per type, addressed by (type, subdomain, value) so that creating one twice changes nothing
 * and deleting a missing one is 404 (design.md, DNS details). Zones pick changes up at once.
 */
export class DnsService {
  constructor(private d: { store: Store; clock: Clock; repo: DnsRepository; settings: ZoneSettings; unlinkSite?: (siteId: string, at: number) => void }) {}

  siteName(site: Pick<SiteRow, 'slug'>): string {
    return `${site.slug}.${this.d.settings.sitesDomain}`
  }

  siteZone(site: SiteRow): DnsZone {
    return this.zoneOf(this.siteOwner(site))
  }

  domainZone(domain: DomainRow): DnsZone {
    return this.zoneOf(this.domainOwner(domain))
  }

  /** The records of many sites, for site views, by site id (sites without records absent). */
  recordsOfSites(sites: Pick<SiteRow, 'id' | 'slug'>[]): Map<string, DnsRecordView[]> {
    const rows = this.d.repo.listForSites(sites.map((s) => s.id))
    const out = new Map<string, DnsRecordView[]>()
    for (const s of sites) {
      const records = rows.get(s.id)
      if (records) out.set(s.id, records.map((r) => view(r, this.siteName(s))))
    }
    return out
  }

  changeSite(site: SiteRow, input: RecordInput & { action: 'create' | 'delete' }): DnsChangeView {
    const owner = this.siteOwner(site)
    return input.action === 'create' ? this.create(owner, input) : this.remove(owner, input)
  }

  addToDomain(domain: DomainRow, input: RecordInput): DnsChangeView {
    return this.create(this.domainOwner(domain), input)
  }

  removeFromDomain(domain: DomainRow, input: RecordInput): DnsChangeView {
    return this.remove(this.domainOwner(domain), input)
  }

  /** Removes every record of a domain (one whose registration failed holds none). */
  removeAllOfDomain(domain: DomainRow): void {
    this.d.store.write(() => this.d.repo.removeAllOf(this.domainOwner(domain).key))
  }

  /** Removes every record of a reaped site, and unlinks its domains (SiteReaper's purger). */
  async removeAllFor(siteId: string): Promise<void> {
    this.d.store.write(() => {
      this.d.repo.removeAllOf({ siteId })
      this.d.unlinkSite?.(siteId, this.d.clock.now())
    })
  }

  private create(owner: Owner, input: RecordInput): DnsChangeView {
    const record = checkRecord(input, owner.name)
    if (record.type === 'CNAME' && record.subdomain === '' && !owner.apexCnameAllowed) {
      throw invalid('subdomain', `A domain's own name cannot be a CNAME (it holds the SOA and NS records); use A/AAAA there, or a CNAME on a subdomain like 'www'.`)
    }
    if (record.type === 'CNAME' && record.value === (record.subdomain ? `${record.subdomain}.${owner.name}` : owner.name)) {
      throw invalid('value', 'A CNAME cannot point to its own name.')
    }
    return this.d.store.write(() => {
      const existing = this.d.repo.find(owner.key, record)
      if (existing) {
        if (existing.ttl === record.ttl) return { action: 'create' as const, changed: false, record: view(existing, owner.name) }
        this.d.repo.remove(existing.id)
        return { action: 'create' as const, changed: true, record: view(this.d.repo.insert(owner.key, record, existing.createdAt), owner.name) }
      }
      const here = this.d.repo.atName(owner.key, record.subdomain)
      const fqdn = record.subdomain ? `${record.subdomain}.${owner.name}` : owner.name
      if (record.type === 'CNAME' ? here.length > 0 : here.some((r) => r.type === 'CNAME')) {
        throw conflict(say`${fqdn} ${record.type === 'CNAME' ? 'already has other records' : 'is a CNAME'}: a CNAME cannot sit beside other records at one name. Delete ${record.type === 'CNAME' ? 'them' : 'the CNAME'} first (${owner.listOp} lists them).`, 'type')
      }
      if (this.d.repo.count(owner.key) >= MAX_RECORDS) throw conflict(say`${owner.name} has ${MAX_RECORDS} records, the most one name may hold; delete some first (${owner.listOp} lists them).`)
      return { action: 'create' as const, changed: true, record: view(this.d.repo.insert(owner.key, record, this.d.clock.now()), owner.name) }
    })
  }

  private remove(owner: Owner, input: RecordInput): DnsChangeView {
    const subdomain = checkSubdomain(input.subdomain, owner.name)
    // A value is matched in its canonical form, so '10  MAIL.example.com.' finds '10 mail.example.com'.
    const key = input.value === undefined ? null : safeCanonical(input, owner.name)
    return this.d.store.write(() => {
      const candidates = this.d.repo.atName(owner.key, subdomain).filter((r) => r.type === input.type && (key === null || r.value === key))
      if (candidates.length === 0) {
        const fqdn = subdomain ? `${subdomain}.${owner.name}` : owner.name
        throw notFound(say`No ${input.type} record${key ? ` '${key}'` : ''} at ${fqdn}; ${owner.listOp} lists the records.`, key ? 'value' : 'type')
      }
      if (candidates.length > 1) throw invalid('value', say`${candidates.length} ${input.type} records are at that name; send the value of the one to delete (${owner.listOp} lists them).`)
      this.d.repo.remove(candidates[0]!.id)
      return { action: 'delete' as const, changed: true, record: view(candidates[0]!, owner.name) }
    })
  }

  private zoneOf(owner: Owner): DnsZone {
    const s = this.d.settings
    const rows = this.d.repo.list(owner.key)
    // What the name answers besides its own records (the zone book's rule): the box's IPv4 unless
    // it has its own A, the IPv6 unless its own AAAA, neither beside a CNAME.
    const own = new Set(rows.filter((r) => r.subdomain === '').map((r) => r.type))
    const defaults = !owner.hasDefaults || own.has('CNAME') ? [] : [...(own.has('A') ? [] : [s.publicIpv4]), ...(s.publicIpv6 && !own.has('AAAA') ? [s.publicIpv6] : [])]
    return { name: owner.name, nameservers: s.nameservers, records: rows.map((r) => view(r, owner.name)), default_addresses: defaults }
  }

  private siteOwner(site: SiteRow): Owner {
    return { key: { siteId: site.id }, name: this.siteName(site), listOp: op('getSiteDns', { tenant_slug: site.slug }), hasDefaults: true, apexCnameAllowed: true }
  }

  private domainOwner(domain: DomainRow): Owner {
    return { key: { domainId: domain.id }, name: domain.name, listOp: op('listDomainDns', { domain_name: domain.name }), hasDefaults: domain.siteId !== null, apexCnameAllowed: false }
  }
}

/** The canonical value of a delete's `value`; the raw text when it does not parse (then nothing matches). */
function safeCanonical(input: RecordInput, owner: string): string {
  try {
    return checkRecord({ ...input, ttl: undefined }, owner).value
  } catch {
    return input.value!
  }
}

function view(r: Pick<DnsRecordRow, 'type' | 'subdomain' | 'value' | 'ttl' | 'createdAt'>, owner: string): DnsRecordView {
  return { type: r.type, subdomain: r.subdomain, name: r.subdomain ? `${r.subdomain}.${owner}` : owner, value: r.value, ttl: r.ttl, created_at: iso(r.createdAt) }
}
