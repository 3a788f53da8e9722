import { SLUG_PATTERN } from '../core/slugs'

const SLUG = new RegExp(SLUG_PATTERN)

/**
 * The slug a Host header names under `sitesDomain`, or null when it names no site: host names
 * compare case-insensitively (RFC 9110 section 4.2.3), a port and one trailing dot are ignored,
 * and only a single label directly under the domain counts, so `a.b.localhost` and the bare
 * domain are not sites.
 *
 * @example
 * parseSiteHost('MySlug.localhost:8080', 'localhost') // 'myslug'
 * parseSiteHost('a.b.localhost', 'localhost')         // null
 */
export function parseSiteHost(host: string, sitesDomain: string): string | null {
  let name = host.toLowerCase()
  if (name.startsWith('[')) return null
  const colon = name.lastIndexOf(':')
  if (colon !== -1) {
    if (!/^\d{1,5}$/.test(name.slice(colon + 1))) return null
    name = name.slice(0, colon)
  }
  if (name.endsWith('.')) name = name.slice(0, -1)
  let domain = sitesDomain.toLowerCase()
  if (domain.endsWith('.')) domain = domain.slice(0, -1)
  const labelEnd = name.length - domain.length - 1
  if (labelEnd < 1 || name.charCodeAt(labelEnd) !== 46 || !name.endsWith(domain)) return null
  const slug = name.slice(0, labelEnd)
  return SLUG.test(slug) ? slug : null
}

/** The host name of a Host header: lower-case, without port or trailing dot (null for IP literals in brackets). */
export function hostNameOf(host: string): string | null {
  let name = host.toLowerCase()
  if (name.startsWith('[')) return null
  const colon = name.lastIndexOf(':')
  if (colon !== -1) {
    if (!/^\d{1,5}$/.test(name.slice(colon + 1))) return null
    name = name.slice(0, colon)
  }
  return name.endsWith('.') ? name.slice(0, -1) : name
}
