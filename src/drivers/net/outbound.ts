import { lookup } from 'node:dns/promises'
import { networkInterfaces } from 'node:os'
import ipaddr from 'ipaddr.js'
import type { Config } from '../../config/config'
import { HostNotFoundError, type OutboundReason, OutboundRefusedError } from './errors'

/**
 * The check before Berth connects anywhere on a site's behalf (a git source; webhooks later):
 * the host is resolved as the system resolves it (`127.1`, `0x7f000001`, `2130706433` and
 * `0177.0.0.1` are 127.0.0.1, as getaddrinfo reads them), and every address it resolves to must
 * be a public unicast one that is not Berth's own, unless it lies inside one of
 * `outbound.allow_networks`. IPv4-mapped (`::ffff:a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4
 * (`2002::/16`) IPv6 addresses are judged by the IPv4 address they carry. The answer is the address
 * checked, which the caller pins the connection to (git's `http.curloptResolve`, ssh's
 * `HostName`): the name is never resolved a second time, so a DNS answer that changes between the
 * check and the connection (rebinding) reaches nothing new.
 */

/** host -> its addresses, as getaddrinfo gives them (tests pass their own). */
export type Resolver = (host: string) => Promise<string[]>

export const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address)

export interface OutboundPolicy {
  /** CIDR ranges allowed whatever they are (`outbound.allow_networks`, checked by the config). */
  allowNetworks: readonly string[]
  /** Berth's own hosts: addresses, or names resolved at each check. */
  ownHosts: readonly string[]
}

/**
 * Berth's own addresses as the config gives them: its listeners, site_url's host, its public
 * addresses and cluster.address; and, when a listener takes every address (0.0.0.0, ::), every
 * address of the box's interfaces (`interfaces`: os.networkInterfaces()).
 */
export function outboundPolicyOf(
  config: Pick<Config, 'server' | 'tls' | 'dns' | 'cluster' | 'metrics' | 'outbound'>,
  interfaces: ReturnType<typeof networkInterfaces> = networkInterfaces(),
): OutboundPolicy {
  const listeners = [config.server.listen.hostname, config.tls.listen?.hostname, config.dns.listen?.hostname, config.metrics.listen?.hostname]
  const wildcard = listeners.some((h) => h === '0.0.0.0' || h === '::' || h === '')
  const own = [
    ...listeners,
    new URL(config.server.siteUrl).hostname.replace(/^\[|\]$/g, ''),
    config.dns.publicIpv4, config.dns.publicIpv6, config.cluster.address,
    ...(wildcard ? Object.values(interfaces).flatMap((list) => (list ?? []).map((i) => i.address)) : []),
  ]
  return { allowNetworks: config.outbound.allowNetworks, ownHosts: [...new Set(own.filter((h): h is string => Boolean(h)))] }
}

export interface CheckedHost {
  /** The address to connect to (the first the host resolved to). */
  address: string
  family: 4 | 6
  /** The address lies in outbound.allow_networks (a hoster's own network: git over http:// is taken from it). */
  listed: boolean
}

const WORDS: Record<OutboundReason, string> = {
  loopback: 'a loopback address (this machine)',
  private: 'a private network address',
  link_local: 'a link-local address (such as the cloud metadata service)',
  unique_local: 'a unique-local IPv6 address (a private network)',
  multicast: 'a multicast address',
  unspecified: 'the unspecified address',
  broadcast: 'the broadcast address',
  reserved: 'a reserved address that is not on the public internet',
  berth: "one of Berth's own addresses",
  not_an_address: 'not an address Berth can check',
}

export class OutboundCheck {
  private readonly allowed: [ipaddr.IPv4 | ipaddr.IPv6, number][]

  constructor(private readonly policy: OutboundPolicy, private readonly resolve: Resolver = systemResolver) {
    this.allowed = policy.allowNetworks.map((c) => ipaddr.parseCIDR(c))
  }

  /** The address to pin `host` to; throws OutboundRefusedError (or HostNotFoundError) otherwise. */
  async check(host: string): Promise<CheckedHost> {
    const bare = host.replace(/^\[|\]$/g, '')
    const addresses = literal(bare) ?? (await this.lookup(bare))
    if (addresses.length === 0) throw new HostNotFoundError(host)
    const own = await this.ownAddresses()
    for (const text of addresses) {
      const reason = this.refusal(text, own)
      if (reason) {
        const shown = text === bare ? '' : ` resolves to ${text}, which`
        throw new OutboundRefusedError(host, text, reason,
          `The host ${JSON.stringify(host)}${shown} is ${WORDS[reason]}; Berth connects only to public addresses. ` +
          'Use a host on the public internet, or ask the hoster to list its network in outbound.allow_networks.')
      }
    }
    const first = ipaddr.parse(addresses[0])
    return { address: first.toString(), family: first.kind() === 'ipv4' ? 4 : 6, listed: this.listed(first) }
  }

  /** Why `text` is refused, or null when it may be reached. */
  refusal(text: string, own: ReadonlySet<string> = new Set()): OutboundReason | null {
    let addr: ipaddr.IPv4 | ipaddr.IPv6
    try {
      addr = ipaddr.parse(text)
    } catch {
      return 'not_an_address'
    }
    const judged = embeddedV4(addr) ?? addr
    if (this.listed(addr)) return null
    return classOf(judged) ?? (own.has(judged.toString()) ? 'berth' : null)
  }

  private listed(addr: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    const judged = embeddedV4(addr) ?? addr
    return this.allowed.some(([net, bits]) => inside(judged, net, bits) || inside(addr, net, bits))
  }

  private async lookup(host: string): Promise<string[]> {
    try {
      return await this.resolve(host)
    } catch {
      throw new HostNotFoundError(host)
    }
  }

  /** Berth's own addresses now (names among them resolved; one that does not resolve is left out). */
  private async ownAddresses(): Promise<Set<string>> {
    const out = new Set<string>()
    for (const host of this.policy.ownHosts) {
      const list = literal(host) ?? (await this.resolve(host).catch(() => [] as string[]))
      for (const a of list) {
        try {
          const parsed = ipaddr.parse(a)
          out.add((embeddedV4(parsed) ?? parsed).toString())
        } catch {
          // not an address: nothing to compare
        }
      }
    }
    return out
  }
}

/** The address `host` is when it is an IP literal in any form getaddrinfo reads (dotted, short, hex, octal, one number). */
function literal(host: string): string[] | null {
  if (!ipaddr.isValid(host)) return null
  return [ipaddr.parse(host).toString()]
}

/** The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4), or null. */
function embeddedV4(addr: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | null {
  if (addr.kind() !== 'ipv6') return null
  const v6 = addr as ipaddr.IPv6
  const range = v6.range()
  const p = v6.parts
  if (range === 'ipv4Mapped' || range === 'rfc6145') return v6.toIPv4Address()
  if (range === 'rfc6052') return ipaddr.IPv4.parse(`${p[6] >> 8}.${p[6] & 255}.${p[7] >> 8}.${p[7] & 255}`)
  if (range === '6to4') return ipaddr.IPv4.parse(`${p[1] >> 8}.${p[1] & 255}.${p[2] >> 8}.${p[2] & 255}`)
  return null
}

function inside(addr: ipaddr.IPv4 | ipaddr.IPv6, net: ipaddr.IPv4 | ipaddr.IPv6, bits: number): boolean {
  return addr.kind() === net.kind() && addr.match(net, bits)
}

function classOf(addr: ipaddr.IPv4 | ipaddr.IPv6): OutboundReason | null {
  const range = addr.range()
  switch (range) {
    case 'unicast': return null
    case 'loopback': return 'loopback'
    case 'private': case 'carrierGradeNat': return 'private'
    case 'linkLocal': return 'link_local'
    case 'uniqueLocal': return 'unique_local'
    case 'multicast': return 'multicast'
    case 'unspecified': return 'unspecified'
    case 'broadcast': return 'broadcast'
    default: return 'reserved'
  }
}
