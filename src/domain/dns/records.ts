import ipaddr from 'ipaddr.js'
import type { DnsRecord } from '../../dns/types'
import type { DnsRecordType } from '../../core/enums'
import { invalid } from '../errors'

/**
 * DNS record input as agents send it, checked per type and put in one canonical text form
 * (design.md: A is IPv4, MX is `priority host`, SRV is `priority weight port target`). The
 * canonical value is what the store keeps and what addresses a record with its type and subdomain.
 */

export const TTL_MIN = 60
export const TTL_MAX = 86_400
export const TTL_DEFAULT = 3600
/** TXT values are split into 255-byte strings on the wire; this bounds one record's whole text. */
export const TXT_MAX_BYTES = 4000
export const MAX_NAME_LENGTH = 253

export interface RecordInput {
  type: DnsRecordType
  subdomain?: string
  value?: string
  ttl?: number
}

export interface CheckedRecord {
  type: DnsRecordType
  subdomain: string
  value: string
  ttl: number
}

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/
/** Underscore labels (`_dmarc`, `_acme-challenge`, `_sip._tcp`) are allowed in owner names. */
const OWNER_LABEL = /^(?:_[a-z0-9-]{1,62}|(?!-)[a-z0-9-]{1,63}(?<!-))$/

/**
 * The record's subdomain, relative to `owner` (lower-case, `@` and empty both mean the owner
 * itself), checked so the whole name is a valid DNS name of at most 253 characters.
 */
export function checkSubdomain(raw: string | undefined, owner: string): string {
  const sub = (raw ?? '').trim().toLowerCase().replace(/\.$/, '')
  if (sub === '' || sub === '@') return ''
  if (sub.endsWith(`.${owner}`) || sub === owner) {
    throw invalid('subdomain', `subdomain is relative to ${owner}: send '${sub === owner ? '' : sub.slice(0, -owner.length - 1)}' (or '' for ${owner} itself), not the full name.`)
  }
  if (sub.includes('*')) throw invalid('subdomain', 'Wildcard records are not supported; create a record for each name.')
  const labels = sub.split('.')
  for (const label of labels) {
    if (!OWNER_LABEL.test(label)) {
      throw invalid('subdomain', `'${label}' is not a valid DNS label: use 1 to 63 letters, digits and hyphens (not at either end), or a label starting with '_'.`)
    }
  }
  if (sub.length + 1 + owner.length > MAX_NAME_LENGTH) throw invalid('subdomain', `${sub}.${owner} is longer than ${MAX_NAME_LENGTH} characters; use a shorter subdomain.`)
  return sub
}

/** A host name a record points to (CNAME, MX, SRV targets): absolute, letters, digits, hyphens. */
function checkHost(raw: string, what: string): string {
  const host = raw.trim().toLowerCase().replace(/\.$/, '')
  const labels = host.split('.')
  if (host.length === 0 || host.length > MAX_NAME_LENGTH || labels.length < 2 || !labels.every((l) => LABEL.test(l) || /^_[a-z0-9-]{1,62}$/.test(l))) {
    throw invalid('value', `${what} must be a full host name like mail.example.com (letters, digits and hyphens, at most ${MAX_NAME_LENGTH} characters); got '${raw}'.`)
  }
  return host
}

function checkUint16(raw: string | undefined, what: string, format: string): number {
  if (raw === undefined || !/^\d{1,5}$/.test(raw) || Number(raw) > 65_535) throw invalid('value', `${what} must be a whole number from 0 to 65535; the value is '${format}'.`)
  return Number(raw)
}

/** Checks a record's type, subdomain, value and TTL; answers its canonical form. */
export function checkRecord(input: RecordInput, owner: string): CheckedRecord {
  const subdomain = checkSubdomain(input.subdomain, owner)
  const ttl = input.ttl ?? TTL_DEFAULT
  if (!Number.isInteger(ttl) || ttl < TTL_MIN || ttl > TTL_MAX) throw invalid('ttl', `ttl must be a whole number of seconds from ${TTL_MIN} to ${TTL_MAX} (default ${TTL_DEFAULT}).`)
  const raw = input.value ?? ''
  if (raw.trim() === '') throw invalid('value', `value is required for a ${input.type} record: ${EXAMPLES[input.type]}.`)
  return { type: input.type, subdomain, ttl, value: checkValue(input.type, raw, subdomain) }
}

const EXAMPLES: Record<DnsRecordType, string> = {
  A: "an IPv4 address like '203.0.113.10'",
  AAAA: "an IPv6 address like '2001:db8::10'",
  CNAME: "a host name like 'shop.example.com'",
  MX: "'priority host', like '10 mail.example.com'",
  TXT: "text, like 'v=spf1 -all'",
  SRV: "'priority weight port target', like '10 5 5060 sip.example.com'",
}

function checkValue(type: DnsRecordType, raw: string, subdomain: string): string {
  const value = raw.trim()
  switch (type) {
    case 'A':
      if (!ipaddr.IPv4.isValidFourPartDecimal(value)) throw invalid('value', `An A record's value must be ${EXAMPLES.A}; got '${raw}'.`)
      return ipaddr.IPv4.parse(value).toString()
    case 'AAAA':
      if (!value.includes(':') || !ipaddr.IPv6.isValid(value) || value.includes('%')) throw invalid('value', `An AAAA record's value must be ${EXAMPLES.AAAA}; got '${raw}'.`)
      return ipaddr.IPv6.parse(value).toString()
    case 'CNAME':
      return checkHost(value, "A CNAME record's value")
    case 'MX': {
      const parts = value.split(/\s+/)
      if (parts.length !== 2) throw invalid('value', `An MX record's value must be ${EXAMPLES.MX}; got '${raw}'.`)
      return `${checkUint16(parts[0], 'The MX priority', value)} ${checkHost(parts[1]!, 'The MX host')}`
    }
    case 'SRV': {
      if (!/^_[a-z0-9-]+\._(tcp|udp|tls|sctp)(\.|$)/.test(subdomain)) throw invalid('subdomain', `An SRV record lives at '_service._proto' (like '_sip._tcp'); got '${subdomain}'.`)
      const parts = value.split(/\s+/)
      if (parts.length !== 4) throw invalid('value', `An SRV record's value must be ${EXAMPLES.SRV}; got '${raw}'.`)
      const [priority, weight, port] = parts.slice(0, 3).map((p, i) => checkUint16(p, ['The SRV priority', 'The SRV weight', 'The SRV port'][i]!, value))
      const target = parts[3] === '.' ? '.' : checkHost(parts[3]!, 'The SRV target')
      return `${priority} ${weight} ${port} ${target}`
    }
    case 'TXT': {
      // Control characters would be sent as is on the wire and garble zone files and logs.
      if (/[\u0000-\u001f\u007f-\u009f]/.test(raw)) throw invalid('value', 'A TXT value must be plain text without control characters (no newlines or tabs).')
      const bytes = Buffer.byteLength(raw)
      if (bytes > TXT_MAX_BYTES) throw invalid('value', `A TXT value is at most ${TXT_MAX_BYTES} bytes; this one is ${bytes}.`)
      return raw
    }
  }
}

/** A stored record as the DNS server serves it, at `name` (its absolute owner name). */
export function toDnsRecord(type: DnsRecordType, value: string, name: string, ttl: number): DnsRecord {
  switch (type) {
    case 'A':
    case 'AAAA':
    case 'CNAME':
      return { name, ttl, type, data: value } as DnsRecord
    case 'MX': {
      const [preference, exchange] = value.split(' ')
      return { name, ttl, type, data: { preference: Number(preference), exchange: exchange! } }
    }
    case 'SRV': {
      const [priority, weight, port, target] = value.split(' ')
      return { name, ttl, type, data: { priority: Number(priority), weight: Number(weight), port: Number(port), target: target === '.' ? '' : target! } }
    }
    case 'TXT':
      return { name, ttl, type, data: splitTxt(value) }
  }
}

/** TXT text as character-strings of at most 255 bytes, never splitting a UTF-8 sequence. */
export function splitTxt(text: string): string[] {
  const parts: string[] = []
  let current = ''
  let bytes = 0
  for (const ch of text) {
    const size = Buffer.byteLength(ch)
    if (bytes + size > 255) {
      parts.push(current)
      current = ''
      bytes = 0
    }
    current += ch
    bytes += size
  }
  parts.push(current)
  return parts
}
