/** Site slugs: 3 to 50 characters, lowercase letters, digits and hyphens, no hyphen at either end. */
export const SLUG_PATTERN = '^[a-z0-9][a-z0-9-]{1,48}[a-z0-9]$'
const SLUG = new RegExp(SLUG_PATTERN)

/**
 * Names no customer may take: they are, or may become, Berth's own host names under
 * sites_domain, or they invite phishing (design.md, Checkout).
 */
export const RESERVED_SLUGS = new Set([
  'www', 'api', 'mcp', 'mail', 'smtp', 'imap', 'pop', 'ns', 'ns1', 'ns2', 'ns3', 'dns', 'admin', 'administrator',
  'root', 'berth', 'status', 'billing', 'pay', 'payment', 'payments', 'checkout', 'account', 'accounts', 'login',
  'auth', 'oauth', 'sso', 'support', 'help', 'docs', 'static', 'assets', 'cdn', 'ftp', 'ssh', 'git', 'host',
  'localhost', 'webmail', 'autoconfig', 'autodiscover', 'security', 'abuse', 'postmaster', 'hostmaster', 'test',
])

/** Why `slug` cannot name a site, or undefined when its form is fine (availability is separate). */
export function slugProblem(slug: string): string | undefined {
  if (!SLUG.test(slug)) return `'${slug}' is not a valid slug: use 3 to 50 lowercase letters, digits and hyphens, starting and ending with a letter or digit.`
  if (slug.includes('--')) return `'${slug}' is not a valid slug: two hyphens in a row are reserved (IDNA uses them).`
  if (RESERVED_SLUGS.has(slug)) return `Slug '${slug}' is reserved; choose another.`
  return undefined
}
