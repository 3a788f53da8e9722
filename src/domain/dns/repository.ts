import { and, asc, count, eq, isNotNull, ne } from 'drizzle-orm'
import { dnsRecords, domains, sites, type DnsRecordRow } from '../../store/schema'
import { onFirstUse } from '../../store/prepared'
import type { Store } from '../../store/store'
import type { CheckedRecord } from './records'

/** The columns of a site's record that the site's view shows. */
export type SiteRecordRow = Pick<DnsRecordRow, 'type' | 'subdomain' | 'value' | 'ttl' | 'createdAt'>

/** A site's records in the order of its listing: by subdomain, type, then age (as `list` orders them). */
const byListingOrder = (a: SiteRecordRow, b: SiteRecordRow) =>
  a.subdomain < b.subdomain ? -1 : a.subdomain > b.subdomain ? 1 : a.type < b.type ? -1 : a.type > b.type ? 1 : a.createdAt - b.createdAt

/** Who owns a record: a site (records under its own name) or a domain. */
export type RecordOwner = { siteId: string; domainId?: undefined } | { domainId: string; siteId?: undefined }

const ownerIs = (o: RecordOwner) => (o.siteId !== undefined ? eq(dnsRecords.siteId, o.siteId) : eq(dnsRecords.domainId, o.domainId!))

/** DNS records of sites and domains, and what the zones are built from. */
export class DnsRepository {
  constructor(private store: Store) {}

  /**
   * Read for every list of site views: prepared once (src/store/prepared.ts), plain SQL naming only
   * the columns a view shows, joined on the ids' JSON list, each row naming its site by position
   * in that list. Sorted per site afterwards: sorting every row in SQL cost more (bench:lists).
   */
  private ofSites = onFirstUse(() => this.store.sqlite.prepare<SiteRecordRow & { at: number }, [string]>(`
    SELECT j.key AS at, d.type, d.subdomain, d.value, d.ttl, d.created_at AS createdAt
    FROM json_each(?) j JOIN dns_records d ON d.site_id = j.value`))

  list(owner: RecordOwner): DnsRecordRow[] {
    return this.store.db.select().from(dnsRecords).where(ownerIs(owner)).orderBy(asc(dnsRecords.subdomain), asc(dnsRecords.type), asc(dnsRecords.createdAt)).all()
  }

  /** Records of many sites at once (site views), keyed by site id. */
  listForSites(siteIds: string[]): Map<string, SiteRecordRow[]> {
    const out = new Map<string, SiteRecordRow[]>()
    if (siteIds.length === 0) return out
    for (const r of this.ofSites().all(JSON.stringify(siteIds))) {
      const siteId = siteIds[r.at]!
      const records = out.get(siteId)
      if (records) records.push(r)
      else out.set(siteId, [r])
    }
    for (const records of out.values()) if (records.length > 1) records.sort(byListingOrder)
    return out
  }

  find(owner: RecordOwner, key: { type: string; subdomain: string; value: string }): DnsRecordRow | undefined {
    return this.store.db.select().from(dnsRecords)
      .where(and(ownerIs(owner), eq(dnsRecords.type, key.type as DnsRecordRow['type']), eq(dnsRecords.subdomain, key.subdomain), eq(dnsRecords.value, key.value))).get()
  }

  /** The records at one subdomain of the owner (the CNAME rule looks at them). */
  atName(owner: RecordOwner, subdomain: string): DnsRecordRow[] {
    return this.store.db.select().from(dnsRecords).where(and(ownerIs(owner), eq(dnsRecords.subdomain, subdomain))).all()
  }

  count(owner: RecordOwner): number {
    return this.store.db.select({ n: count() }).from(dnsRecords).where(ownerIs(owner)).get()!.n
  }

  insert(owner: RecordOwner, record: CheckedRecord, at: number): DnsRecordRow {
    return this.store.db.insert(dnsRecords).values({ id: crypto.randomUUID(), siteId: owner.siteId ?? null, domainId: owner.domainId ?? null, ...record, createdAt: at }).returning().get()
  }

  remove(id: string): void {
    this.store.db.delete(dnsRecords).where(eq(dnsRecords.id, id)).run()
  }

  /** Drops every record of a reaped site. */
  removeAllOf(owner: RecordOwner): void {
    this.store.db.delete(dnsRecords).where(ownerIs(owner)).run()
  }

  /** Everything the zones are built from, in three reads. */
  zoneSources() {
    const db = this.store.db
    return {
      sites: db.select({ id: sites.id, slug: sites.slug }).from(sites).where(ne(sites.status, 'deleted')).all(),
      domains: db.select({ id: domains.id, name: domains.name, siteId: domains.siteId }).from(domains).where(eq(domains.status, 'active')).all(),
      records: db.select().from(dnsRecords).where(isNotNull(dnsRecords.id)).all(),
    }
  }
}
