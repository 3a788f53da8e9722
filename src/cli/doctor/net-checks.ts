import ipaddr from 'ipaddr.js'
import type { Config } from '../../config/config'
import type { BoxProbes } from '../../drivers/host/types'
import { fail, pass, reasonOf, warn, type CheckResult } from './check'

/**
 * The checks of what lies outside the box: the ACME server and the clock against it, the
 * delegation of sites.domain, the off-box destination.
 */

/** Within this many seconds of the CA's clock PASSes (the Date header counts whole seconds). */
export const CLOCK_PASS_SECONDS = 5
/**
 * Beyond this it FAILs: S3 refuses requests signed 15 minutes off and Stripe's webhook signatures
 * allow 5, but well before that, grace periods, renewals and certificates' dates are off by as much.
 */
export const CLOCK_FAIL_SECONDS = 30

/** What the ACME directory answered, fetched once for the two checks that read it. */
export type DirectoryAnswer = { status: number; dateMs: number | null; body: unknown; askedAt: number; answeredAt: number } | { error: string }

export async function askDirectory(config: Config, probes: BoxProbes): Promise<DirectoryAnswer | null> {
  if (!config.tls.acme) return null
  const askedAt = probes.now()
  try {
    const answer = await probes.fetchDirectory(config.tls.acme.directoryUrl, config.tls.acme.caBundle)
    return { ...answer, askedAt, answeredAt: probes.now() }
  } catch (err) {
    return { error: reasonOf(err) }
  }
}

/** The directory answers 200 with the three URLs an order needs (RFC 8555 §7.1.1). */
export function checkAcme(config: Config, answer: DirectoryAnswer | null): CheckResult {
  const name = 'acme'
  if (!config.tls.acme || !answer) {
    return warn(name, 'tls.acme_directory is empty: Berth gets no certificates, sites answer over plain HTTP only', "set tls.acme_directory (Let's Encrypt's), tls.acme_email and tls.acme_terms_agreed (docs/configuration.md)")
  }
  const url = config.tls.acme.directoryUrl
  const fix = `check that this box reaches ${new URL(url).host} over HTTPS (firewall, proxy, tls.ca_bundle for a private CA) and that tls.acme_directory is right`
  if ('error' in answer) return fail(name, `${url} did not answer: ${answer.error}`, fix)
  const body = answer.body as Record<string, unknown> | null
  const complete = answer.status === 200 && body !== null && typeof body === 'object' && ['newNonce', 'newAccount', 'newOrder'].every((k) => typeof body[k] === 'string')
  if (!complete) return fail(name, `${url} answered ${answer.status} without newNonce, newAccount and newOrder: not an ACME directory`, fix)
  return pass(name, `${url} answers as an ACME directory`)
}

/** This box's clock (Berth's, dev.clock_offset_seconds included) against the Date of the CA's answer. */
export function checkClock(config: Config, answer: DirectoryAnswer | null): CheckResult {
  const name = 'clock'
  if (!config.tls.acme || !answer) return warn(name, 'tls.acme_directory is empty: no ACME server to compare the clock with', 'keep the clock synchronised anyway (timedatectl set-ntp true)')
  if ('error' in answer || answer.dateMs === null || Number.isNaN(answer.dateMs)) {
    return warn(name, `${config.tls.acme.directoryUrl} gave no Date to compare the clock with`, 'see the acme check; keep the clock synchronised (timedatectl set-ntp true)')
  }
  // The server stamped its Date between asking and the answer; a whole second is lost to rounding.
  const midpoint = (answer.askedAt + answer.answeredAt) / 2
  const offset = (midpoint - answer.dateMs) / 1000
  const off = Math.abs(offset)
  const detail = `${off.toFixed(1)} s ${offset >= 0 ? 'ahead of' : 'behind'} ${new URL(config.tls.acme.directoryUrl).host}'s clock`
  const fix = 'synchronise the clock: timedatectl set-ntp true (systemd-timesyncd or chrony)'
  if (off > CLOCK_FAIL_SECONDS) return fail(name, `${detail}: more than ${CLOCK_FAIL_SECONDS} s`, fix)
  if (off > CLOCK_PASS_SECONDS + 1) return warn(name, `${detail}: more than ${CLOCK_PASS_SECONDS} s`, fix)
  return pass(name, `${detail}: within ${CLOCK_PASS_SECONDS} s`)
}

/** Names for local use and documentation (RFC 6761, RFC 2606): nothing is delegated there. */
const LOCAL_NAME = /(^|\.)(localhost|test|invalid|example|local|internal)$/

/**
 * sites.domain is delegated to Berth through the system resolver: its NS are dns.nameservers,
 * and each of them (the glue, for names under sites.domain) answers dns.public_ipv4 (and
 * dns.public_ipv6 when set).
 */
export async function checkDelegation(config: Config, probes: BoxProbes): Promise<CheckResult> {
  const name = 'delegation'
  const domain = config.sites.domain
  if (LOCAL_NAME.test(domain)) return warn(name, `sites.domain ${domain} is a name for local use: no visitor outside this box reaches the sites`, 'set sites.domain to a domain you own, delegated to this box (docs/install.md)')
  if (!config.dns.listen) return warn(name, `dns.listen is off: Berth answers no DNS for ${domain}, so its delegation is not checked`, `point *.${domain} at this box at your DNS host, or turn dns.listen on and delegate ${domain} here`)
  const expected = config.dns.nameservers
  const fixNs = `at the registrar of ${domain}'s parent, set its NS to ${expected.join(' and ')} with glue ${[config.dns.publicIpv4, config.dns.publicIpv6].filter(Boolean).join(' and ')}`
  let ns
  try {
    ns = (await probes.resolveNs(domain)).map((n) => n.toLowerCase().replace(/\.$/, '')).sort()
  } catch (err) {
    return warn(name, `cannot ask about ${domain}: ${reasonOf(err)}`, 'check /etc/resolv.conf (resolvectl status), then run berth doctor again')
  }
  if (ns.length === 0) return fail(name, `${domain} has no NS records through the system resolver: it is not delegated`, fixNs)
  const [missing, extra] = [expected.filter((n) => !ns.includes(n)), ns.filter((n) => !expected.includes(n))]
  if (missing.length > 0 || extra.length > 0) return fail(name, `${domain}'s NS are ${ns.join(', ')}; Berth's (dns.nameservers) are ${expected.join(', ')}`, fixNs)
  const wanted = [config.dns.publicIpv4, ...(config.dns.publicIpv6 ? [config.dns.publicIpv6] : [])]
  for (const server of expected) {
    let addresses
    try {
      addresses = await probes.resolveAddresses(server)
    } catch (err) {
      return warn(name, `cannot ask about ${server}: ${reasonOf(err)}`, 'check /etc/resolv.conf (resolvectl status), then run berth doctor again')
    }
    const found = new Set(addresses.map(sameAddress))
    const absent = wanted.filter((a) => !found.has(sameAddress(a)))
    if (absent.length > 0) {
      return fail(name, `${server} answers ${addresses.join(', ') || 'no address'}, not this box's ${absent.join(' and ')} (dns.public_ipv4/ipv6)`, fixNs)
    }
  }
  return pass(name, `${domain} is delegated to ${expected.join(', ')}, which answer ${wanted.join(' and ')}`)
}

/** One spelling per address (2001:db8:0::10 and 2001:db8::10 are one). */
const sameAddress = (address: string) => (ipaddr.isValid(address) ? ipaddr.parse(address).toNormalizedString() : address)

/** The off-box destination takes a test object (put, read back, delete) with the configured credentials. */
export async function checkOffsite(config: Config, probes: BoxProbes): Promise<CheckResult> {
  const name = 'offsite'
  if (!config.offsite.url) return warn(name, 'offsite.url is empty: no copies leave the box, so losing it loses every site', 'set offsite.url and offsite.age_recipients (docs/operations.md, "Copies off the box")')
  try {
    await probes.offsiteProbe()
  } catch (err) {
    return fail(name, `${config.offsite.url} refused a test object: ${reasonOf(err)}`, 'fix the destination or its credentials (offsite.*); berth offsite status shows the last error')
  }
  return pass(name, `${config.offsite.url} took, gave back and deleted a test object`)
}
