/**
 * The forms of names and numbers the server takes, as JSON Schema patterns (ECMA-262, no flags),
 * for the request schemas and so for the published document. Each mirrors a check of the domain
 * (named beside it), which stays the authority: these state it where clients read it. Spaces
 * around a value are allowed where the domain trims them. src/api/openapi-rules.test.ts sends
 * the same table of values to the server and to the document's schemas and holds that they agree.
 */

/** A DNS label (RFC 1035 section 2.3.4, letters either case): 1 to 63 characters, no hyphen at either end. */
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
/** A service label (`_dmarc`, `_sip`): an underscore and 1 to 62 more (domain/dns/records.ts OWNER_LABEL). */
const SERVICE_LABEL = '_[A-Za-z0-9-]{1,62}'
const ANY_LABEL = `(?:${LABEL}|${SERVICE_LABEL})`
/** A top-level domain: letters, or an IDNA A-label (domain/domains/names.ts). */
const TLD = '(?:[A-Za-z]{2,63}|[Xx][Nn]--[A-Za-z0-9-]{1,59})'

/**
 * A domain name to search or register (domain/domains/names.ts normalizeDomain): at least two
 * labels, an alphabetic TLD, at most 253 characters, an optional final dot; or a name with
 * non-ASCII letters (an IDN), which the server converts to its A-label and checks then.
 */
export const DOMAIN_PATTERN = `^ *(?=[!-~]{1,253}\\.? *$)(?:${LABEL}\\.)+${TLD}\\.? *$|[^\\x00-\\x7F]`

/**
 * A record's name relative to its site or domain (domain/dns/records.ts checkSubdomain): '' or
 * '@' for the name itself, else dot-separated labels of at most 63 characters (service labels
 * like `_dmarc` allowed); no wildcard.
 */
export const SUBDOMAIN_PATTERN = `^ *(?:@|(?:${ANY_LABEL}\\.)*${ANY_LABEL}\\.?)? *$`

/** A host name a record points to: two labels or more, an optional final dot (records.ts checkHost). */
const HOST = `(?:${ANY_LABEL}\\.)+${ANY_LABEL}\\.?`
/** 0 to 65535, in at most 5 digits (records.ts checkUint16). */
const UINT16 = '(?:[0-5]?[0-9]{1,4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])'
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])'

/** Each record type's value, as records.ts checkValue takes it (TXT: any plain text). */
export const RECORD_VALUE_PATTERNS = {
  A: `^\\s*(?:${OCTET}\\.){3}${OCTET}\\s*$`,
  CNAME: `^\\s*${HOST}\\s*$`,
  MX: `^\\s*${UINT16}\\s+${HOST}\\s*$`,
  SRV: `^\\s*${UINT16}\\s+${UINT16}\\s+${UINT16}\\s+(?:${HOST}|\\.)\\s*$`,
} as const

/** Where an SRV record lives: `_service._proto` (RFC 2782), then any further labels. */
export const SRV_SUBDOMAIN_PATTERN = '^ *_[A-Za-z0-9-]+\\._(?:[Tt][Cc][Pp]|[Uu][Dd][Pp]|[Tt][Ll][Ss]|[Ss][Cc][Tt][Pp])(?:\\..*)? *$'

/**
 * One OpenSSH public key line (domain/ssh/public-key.ts parsePublicKey): optional options, a
 * supported type, the base64 key, an optional comment; one line.
 */
export const SSH_PUBLIC_KEY_PATTERN = '^[^\\r\\n]*?(?:^|[ \\t])(?:ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521))[ \\t]+[A-Za-z0-9+/]+={0,2}(?:[ \\t][^\\r\\n]*)?\\r?\\n?$'

/** A name ending in `.ca` (spaces and a final dot allowed), which needs a CIRA legal type. */
export const CA_NAME_PATTERN = '\\.[Cc][Aa]\\.? *$'
