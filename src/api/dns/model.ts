import { t } from 'elysia'
import { DnsRecordTypeSchema } from '../../core/enums'
import { DnsChange, DnsRecord, DnsZoneView, TTL_DEFAULT, TTL_MAX, TTL_MIN, TXT_MAX_BYTES } from '../../domain/dns'
import { Body, checkedByService, JsonInteger, Text, type ServiceRule } from '../http/schemas'
import { RECORD_VALUE_PATTERNS, SRV_SUBDOMAIN_PATTERN, SUBDOMAIN_PATTERN } from '../http/name-patterns'
export { DnsChange, DnsRecord, DnsZoneView }

/** The fields that address and describe one record, shared by site and domain DNS. */
export const RecordFields = {
  type: DnsRecordTypeSchema,
  subdomain: t.Optional(t.String({
    maxLength: 200, pattern: SUBDOMAIN_PATTERN, examples: ['www'],
    description: "Relative to the site's (or domain's) name: 'www', '_dmarc', '' (the default) or '@' for the name itself. Labels of 1 to 63 letters, digits and hyphens (not at either end) or starting with '_', a dot between them; no wildcard.",
    error: "must be DNS labels of 1 to 63 letters, digits and hyphens (not at either end) or starting with '_', a dot between them, like 'www' or '_dmarc', or '' or '@' for the name itself; Wildcard records (*) are not supported",
  })),
  value: t.Optional(Text({ maxLength: TXT_MAX_BYTES, description: "A: IPv4. AAAA: IPv6. CNAME: a host name. MX: 'priority host'. TXT: text. SRV: 'priority weight port target'. Required to create; to delete, needed only when several records of the type are at the name.", examples: ['203.0.113.10'] })),
  ttl: t.Optional(JsonInteger({ minimum: TTL_MIN, maximum: TTL_MAX, default: TTL_DEFAULT, description: `Seconds, ${TTL_MIN} to ${TTL_MAX}; default ${TTL_DEFAULT}.` })),
}

const typeIs = (type: string): ServiceRule => ({ properties: { type: { const: type } }, required: ['type'] })
const valueMatches = (pattern: string): ServiceRule => ({ properties: { value: { pattern } } })

/**
 * What creating a record needs (domain/dns/records.ts checkRecord): a value that is not blank,
 * of its type's form (A IPv4, AAAA IPv6, CNAME a host, MX `priority host`, SRV `priority weight
 * port target` at `_service._proto`; TXT any plain text). The service checks them and says which
 * part is wrong; the document states them.
 */
const CREATE_RULES: ServiceRule[] = [
  { required: ['value'], ...valueMatches('^[\\s\\S]*\\S[\\s\\S]*$') },
  { if: typeIs('A'), then: valueMatches(RECORD_VALUE_PATTERNS.A) },
  { if: typeIs('AAAA'), then: { properties: { value: { format: 'ipv6' } } } },
  { if: typeIs('CNAME'), then: valueMatches(RECORD_VALUE_PATTERNS.CNAME) },
  { if: typeIs('MX'), then: valueMatches(RECORD_VALUE_PATTERNS.MX) },
  { if: typeIs('SRV'), then: { required: ['subdomain'], properties: { value: { pattern: RECORD_VALUE_PATTERNS.SRV }, subdomain: { pattern: SRV_SUBDOMAIN_PATTERN } } } },
]

export const SiteDnsBody = Body({
  action: t.Union([t.Literal('create'), t.Literal('delete')], { description: 'create (idempotent: the same type, subdomain and value changes nothing) or delete.' }),
  ...RecordFields,
}, checkedByService({ if: { properties: { action: { const: 'create' } }, required: ['action'] }, then: { allOf: CREATE_RULES } }))

/** A record to add to a domain: as SiteDnsBody's create. */
export const AddDnsBody = Body({ ...RecordFields }, checkedByService(...CREATE_RULES))

/** A record to delete: found by type and subdomain, and by value when several are there (any text; an unknown one is 404). */
export const RemoveDnsBody = Body({ ...RecordFields })
