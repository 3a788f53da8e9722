import { Type as t, type Static } from '@sinclair/typebox'
import { DnsRecordTypeSchema } from '../../core/enums'

export const DnsRecord = t.Object({
  type: DnsRecordTypeSchema,
  subdomain: t.String({ description: "Relative to the site's (or domain's) name; empty for the name itself." }),
  name: t.String({ examples: ['www.acme.sites.example.com'], description: 'The absolute name the record answers for.' }),
  value: t.String({ examples: ['203.0.113.10'], description: 'Canonical form: an address, a host name, `priority host` (MX), `priority weight port target` (SRV) or text (TXT).' }),
  ttl: t.Integer({ examples: [3600] }),
  created_at: t.String({ format: 'date-time' }),
})
export type DnsRecordView = Static<typeof DnsRecord>

export const DnsZoneView = t.Object({
  name: t.String({ examples: ['acme.sites.example.com'], description: 'The name the records live under.' }),
  nameservers: t.Array(t.String(), { description: "Berth's nameservers, which answer for this name." }),
  records: t.Array(DnsRecord, { description: 'The records you created.' }),
  default_addresses: t.Array(t.String(), { description: "The box's addresses the name answers besides its own records: the IPv4 until you set an A, the IPv6 until you set an AAAA, neither with a CNAME (empty for an unlinked domain)." }),
})
export type DnsZone = Static<typeof DnsZoneView>

export const DnsChange = t.Object({
  action: t.Union([t.Literal('create'), t.Literal('delete')]),
  changed: t.Boolean({ description: 'false when a create found the same record already there (nothing changed).' }),
  record: DnsRecord,
})
export type DnsChangeView = Static<typeof DnsChange>
