import { invalid } from '../errors'

/** CIRA's legal types, required to register a `.ca` name (spec part 4, Domains). */
export const CA_LEGAL_TYPES = ['CCO', 'CCT', 'RES', 'GOV', 'EDU', 'ASS', 'HOP', 'PRT', 'TDM', 'TRD', 'PLT', 'LAM', 'MAJ', 'INB', 'ABO', 'LGR'] as const

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/
/**
 * A name with non-ASCII letters as sent, before the URL parser's IDNA: labels between full stops
 * (the ASCII one and those UTS 46 maps to it), of letters, digits and hyphens, no hyphen at
 * either end. The URL parser alone would take `bücher.de/path` or `bücher.de:80` as the host
 * `bücher.de`, dropping the rest (issue 36).
 */
const U_LABEL = /^(?!-)[^\x00-\x2c\x2e-\x2f\x3a-\x40\x5b-\x60\x7b-\x7f]+(?<!-)$/
const U_DOT = /[.\u3002\uff0e\uff61]/

/**
 * A domain name as the registrar and the DNS server take it: lower-case A-labels (an IDN is
 * converted with the URL parser's IDNA), at least two labels, an alphabetic TLD (or an `xn--`
 * one), at most 253 characters, no trailing dot. Anything else is invalid on `param`.
 */
export function normalizeDomain(raw: string, param = 'domain'): string {
  const trimmed = raw.trim().replace(/\.$/, '')
  let name: string
  try {
    if (/^[\x21-\x7e]*$/.test(trimmed)) name = trimmed.toLowerCase()
    else name = trimmed.split(U_DOT).every((l) => U_LABEL.test(l)) ? new URL(`http://${trimmed}/`).hostname : ''
  } catch {
    name = ''
  }
  const labels = name.split('.')
  const tld = labels[labels.length - 1] ?? ''
  if (name.length === 0 || name.length > 253 || labels.length < 2 || !labels.every((l) => LABEL.test(l)) || !/^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$/.test(tld)) {
    throw invalid(param, `'${raw}' is not a domain name: send a name like example.com (letters, digits and hyphens, a dot between labels, no scheme, path or port).`)
  }
  return name
}

/** The registrable part of a name's TLD handling: `.ca` needs a CIRA legal type. */
export const isCa = (domain: string) => domain.endsWith('.ca')
