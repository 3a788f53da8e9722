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
 * Characters outside ASCII whose NFKC form holds ASCII other than a letter, digit or hyphen
 * (U+2024 '.', U+FF0F '/', U+1F100 '0,' ...): IDNA maps them to it and refuses the name. The
 * two last ranges are written as themselves: no escape of an astral character reads the same in
 * ECMA-262 (with or without `u`), Python and Rust. name-patterns.test.ts recomputes the set.
 */
export const IDN_PUNCTUATION = '\\u00A8\\u00AF\\u00B4\\u00B8\\u02D8-\\u02DD\\u037A\\u037E\\u0384-\\u0385\\u1FBD\\u1FBF-\\u1FC1\\u1FCD-\\u1FCF\\u1FDD-\\u1FDF\\u1FED-\\u1FEF\\u1FFD-\\u1FFE\\u2000-\\u200A\\u2017\\u2024-\\u2026\\u202F\\u203C\\u203E\\u2047-\\u2049\\u205F\\u207A\\u207C-\\u207E\\u208A\\u208C-\\u208E\\u2100-\\u2101\\u2105-\\u2106\\u2474-\\u24B5\\u2A74-\\u2A76\\u3000\\u309B-\\u309C\\u3200-\\u321E\\u3220-\\u3243\\u33C2\\u33C7\\u33D8\\uFB29\\uFC5E-\\uFC63\\uFDFA-\\uFDFB\\uFE10\\uFE13-\\uFE16\\uFE19\\uFE30\\uFE33-\\uFE38\\uFE47-\\uFE50\\uFE52\\uFE54-\\uFE57\\uFE59-\\uFE5C\\uFE5F-\\uFE62\\uFE64-\\uFE66\\uFE68-\\uFE6B\\uFE70\\uFE72\\uFE74\\uFE76\\uFE78\\uFE7A\\uFE7C\\uFE7E\\uFF01-\\uFF0C\\uFF0E-\\uFF0F\\uFF1A-\\uFF20\\uFF3B-\\uFF40\\uFF5B-\\uFF5E\\uFFE3🄀-🄊🄐-🄩'

/**
 * A character outside ASCII that may stand in an IDN's label: not a C1 control, a space of any
 * kind, a full stop, or IDN_PUNCTUATION.
 */
const NON_ASCII = `[^\\x00-\\xA0\\u1680\\u2000-\\u200B\\u2028\\u2029\\u202F\\u205F\\u3000\\u3002\\uFEFF\\uFF0E\\uFF61${IDN_PUNCTUATION}]`
const U_CHAR = `(?:[A-Za-z0-9]|${NON_ASCII})`
/**
 * A label of an IDN as sent (a U-label): letters, digits, hyphens and non-ASCII letters, no
 * hyphen at either end; not an A-label (`xn--`), whose punycode the server's IDNA checks there.
 */
const U_LABEL = `(?![Xx][Nn]--)${U_CHAR}(?:(?:[A-Za-z0-9-]|${NON_ASCII}){0,61}${U_CHAR})?`
/** An IDN's top-level label: alphabetic, or one holding a non-ASCII letter. */
const U_TLD = `(?:[A-Za-z]{2,63}|(?![Xx][Nn]--)(?:[A-Za-z0-9][A-Za-z0-9-]*)?${NON_ASCII}(?:(?:[A-Za-z0-9-]|${NON_ASCII})*${U_CHAR})?)`
/** The full stops IDNA takes between labels (UTS 46 maps the ideographic and fullwidth ones to '.'). */
const U_DOT = '[.\\u3002\\uFF0E\\uFF61]'

/**
 * A domain name to search or register (domain/domains/names.ts normalizeDomain): at least two
 * labels, an alphabetic TLD, at most 253 characters, an optional final dot; or a name with
 * non-ASCII letters (an IDN), labels of the same form, which the server converts to its
 * A-labels and checks again. Both branches are anchored: a name is refused whole or taken whole
 * (issue 36). What no pattern states, IDNA's own (UTS 46): code points it does not allow
 * (unassigned ones, some symbols), the bidirectional rule, and an A-label's length of at most
 * 63. Published only (checkedByService): one range lies outside the BMP, and the request
 * validator compiles patterns without the `u` flag; the service checks the name.
 */
export const DOMAIN_PATTERN = `^ *(?=[!-~]{1,253}\\.? *$)(?:${LABEL}\\.)+${TLD}\\.? *$|^ *(?=[^ ]*${NON_ASCII})(?:${U_LABEL}${U_DOT})+${U_TLD}\\.? *$`

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

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
const B64_CHAR = '[A-Za-z0-9+/]'
/** The base64 characters that may stand where only some bits are free: those from `from` to `to`. */
const b64Between = (from: string, to: string) => `[${B64.slice(B64.indexOf(from), B64.indexOf(to) + 1)}]`
/** The last character before padding: its low bits are zero (RFC 4648 section 3.5, canonical base64). */
const B64_LAST = { 1: '[AEIMQUYcgkosw048]=', 2: '[AQgw]==' } as const
const sshString = (text: string) => Buffer.concat([Buffer.from([0, 0, 0, text.length]), Buffer.from(text, 'latin1')])

/**
 * The base64 of a key blob (RFC 4253 section 6.6) that starts with `header` and has `free` more
 * bytes: the characters the header fixes, then any, then the padding its length implies.
 */
function fixedBlob(header: Buffer, free: number): string {
  const low = Buffer.concat([header, Buffer.alloc(free, 0)]).toString('base64')
  const high = Buffer.concat([header, Buffer.alloc(free, 0xff)]).toString('base64')
  let fixed = 0
  while (low[fixed] === high[fixed]) fixed++
  const padding = (3 - ((header.length + free) % 3)) % 3
  const last = padding === 0 ? B64_CHAR : B64_LAST[padding as 1 | 2]
  const between = low.length - padding - fixed - 2
  return `${low.slice(0, fixed)}${b64Between(low[fixed]!, high[fixed]!)}${B64_CHAR}{${between}}${last}`
}

const CURVE_BYTES = { 256: 32, 384: 48, 521: 66 } as const
/** Each supported type with the base64 its blob must have (domain/ssh/public-key.ts checkBlob). */
const SSH_KEY_FORMS = [
  `ssh-ed25519[ \\t]+${fixedBlob(Buffer.concat([sshString('ssh-ed25519'), Buffer.from([0, 0, 0, 32])]), 32)}`,
  ...Object.entries(CURVE_BYTES).map(([bits, size]) => {
    const type = `ecdsa-sha2-nistp${bits}`
    const header = Buffer.concat([sshString(type), sshString(`nistp${bits}`), Buffer.from([0, 0, 0, 1 + 2 * size, 4])])
    return `${type}[ \\t]+${fixedBlob(header, 2 * size)}`
  }),
  // RSA: the type, then at least 2048 bits of modulus (276 bytes of blob, 368 characters).
  `ssh-rsa[ \\t]+${Buffer.concat([sshString('ssh-rsa'), Buffer.from([0])]).toString('base64').slice(0, 16)}(?:${B64_CHAR}{4}){87,}(?:${B64_CHAR}{4}|${B64_CHAR}{2}${B64_LAST[1]}|${B64_CHAR}${B64_LAST[2]})`,
]

/**
 * One OpenSSH public key line (domain/ssh/public-key.ts parsePublicKey): optional options, a
 * supported type, its base64 key (whose first bytes name the same type, of the type's length:
 * `ssh-ed25519 0` is no key), an optional comment; one line. What no pattern can say: the key
 * must also decode to a real key (a point on the curve, an RSA modulus of 2048 to 16384 bits).
 */
export const SSH_PUBLIC_KEY_PATTERN = `^[^\\r\\n]*?(?:^|[ \\t])(?:${SSH_KEY_FORMS.join('|')})(?:[ \\t][^\\r\\n]*)?\\r?\\n?$`

/** A name ending in `.ca` (spaces and a final dot allowed), which needs a CIRA legal type. */
export const CA_NAME_PATTERN = '^[\\s\\S]*\\.[Cc][Aa]\\.? *$'

/**
 * An email address as the server takes it (Elysia's `email` format, which the request validator
 * checks): a dot-atom of ASCII letters, digits and !#$%&'*+/=?^_`{|}~- before the @, a domain of
 * two labels or more after it. Stricter than `format: email` (RFC 5321): no quoted local part, no
 * address literal (`a@[192.0.2.1]`), no single-label domain (`a@b`), no non-ASCII (docs/api.md).
 */
export const EMAIL_PATTERN = "^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$"
