import { t } from 'elysia'
import { DnsRecordTypeSchema } from '../../domain/enums'
import { TTL_DEFAULT, TTL_MAX, TTL_MIN, TXT_MAX_BYTES } from '../../domain/dns/records'
import { Body, JsonInteger, Text } from '../http/schemas'
import { DnsChange, DnsRecord, DnsZoneView } from '../../domain/dns/views'
export { DnsChange, DnsRecord, DnsZoneView }

/** The fields that address and describe one record, shared by site and domain DNS. */
export const RecordFields = {
  type: DnsRecordTypeSchema,
  subdomain: t.Optional(Text({ maxLength: 200, description: "Relative to the site's (or domain's) name: 'www', '_dmarc', '' (the default) or '@' for the name itself.", examples: ['www'] })),
  value: t.Optional(Text({ maxLength: TXT_MAX_BYTES, description: "A: IPv4. AAAA: IPv6. CNAME: a host name. MX: 'priority host'. TXT: text. SRV: 'priority weight port target'. Required to create; to delete, needed only when several records of the type are at the name.", examples: ['203.0.113.10'] })),
  ttl: t.Optional(JsonInteger({ minimum: TTL_MIN, maximum: TTL_MAX, default: TTL_DEFAULT, description: `Seconds, ${TTL_MIN} to ${TTL_MAX}; default ${TTL_DEFAULT}.` })),
}

export const SiteDnsBody = Body({
  action: t.Union([t.Literal('create'), t.Literal('delete')], { description: 'create (idempotent: the same type, subdomain and value changes nothing) or delete.' }),
  ...RecordFields,
})
