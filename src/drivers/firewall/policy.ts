import ipaddr from 'ipaddr.js'
import type { SiteFirewallPolicy } from './types'

/**
 * A site firewall policy as it travels between boxes (the join's answer, the control plane's
 * `PUT /v1/firewall` to a node's agent), checked field by field.
 */

/** A policy read from JSON, or what is wrong with it (`param`: the field, dotted). */
export type ParsedPolicy = { policy: SiteFirewallPolicy | null } | { error: string; param: string }

/**
 * Checks `value` is a SiteFirewallPolicy, or null (no firewall): an IPv4 pool in CIDR, IPv4
 * addresses, and ports as ascending lists of integers from 1 to 65535. Unknown fields are refused.
 */
export function parseFirewallPolicy(value: unknown): ParsedPolicy {
  if (value === null) return { policy: null }
  const fail = (param: string, error: string): ParsedPolicy => ({ param, error })
  if (!isObject(value)) return fail('policy', 'must be an object or null')
  const unknown = Object.keys(value).find((k) => !['pool', 'publicEdge', 'guardedHost', 'closedPorts', 'blockedHosts', 'refusedTcpPorts'].includes(k))
  if (unknown) return fail(`policy.${unknown}`, 'is not a field of a firewall policy')
  const { pool, publicEdge, guardedHost, closedPorts, blockedHosts, refusedTcpPorts } = value
  if (typeof pool !== 'string' || !isIpv4Cidr(pool)) return fail('policy.pool', 'must be an IPv4 network in CIDR form, such as 10.231.0.0/16')
  const policy: SiteFirewallPolicy = { pool, publicEdge: null }
  if (publicEdge !== null && publicEdge !== undefined) {
    if (!isObject(publicEdge) || !isIpv4(publicEdge.address) || !isPortList(publicEdge.ports)) return fail('policy.publicEdge', 'must be null or { address: IPv4, ports: [1-65535, ...] }')
    policy.publicEdge = { address: publicEdge.address, ports: publicEdge.ports }
  }
  if (guardedHost !== undefined) {
    if (guardedHost !== null && (!isObject(guardedHost) || !isIpv4(guardedHost.address) || !isPortList(guardedHost.openPorts))) return fail('policy.guardedHost', 'must be null or { address: IPv4, openPorts: [1-65535, ...] }')
    policy.guardedHost = guardedHost === null ? null : { address: guardedHost.address as string, openPorts: guardedHost.openPorts as number[] }
  }
  if (closedPorts !== undefined) {
    if (closedPorts !== null && (!isObject(closedPorts) || !isPortList(closedPorts.tcp) || !isPortList(closedPorts.udp))) return fail('policy.closedPorts', 'must be null or { tcp: [1-65535, ...], udp: [1-65535, ...] }')
    policy.closedPorts = closedPorts === null ? null : { tcp: closedPorts.tcp as number[], udp: closedPorts.udp as number[] }
  }
  if (blockedHosts !== undefined) {
    if (blockedHosts !== null && !isAddressList(blockedHosts)) return fail('policy.blockedHosts', `must be null or a list of IPv4 addresses in ascending order, at most ${MAX_HOSTS}`)
    policy.blockedHosts = blockedHosts === null ? null : (blockedHosts as string[])
  }
  if (refusedTcpPorts !== undefined) {
    if (refusedTcpPorts !== null && !isPortList(refusedTcpPorts)) return fail('policy.refusedTcpPorts', 'must be null or [1-65535, ...], ascending, once each')
    policy.refusedTcpPorts = refusedTcpPorts === null ? null : (refusedTcpPorts as number[])
  }
  return { policy }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function isIpv4(v: unknown): v is string {
  return typeof v === 'string' && ipaddr.IPv4.isValidFourPartDecimal(v)
}

function isIpv4Cidr(v: string): boolean {
  try {
    const [address, bits] = ipaddr.parseCIDR(v)
    return address.kind() === 'ipv4' && bits >= 8 && bits <= 30
  } catch {
    return false
  }
}

/** The most blocked hosts a policy holds (one rule each): nodes of a cluster. */
const MAX_HOSTS = 4096

/** IPv4 addresses, ascending by their numeric value, once each. */
function isAddressList(v: unknown): v is string[] {
  if (!Array.isArray(v) || v.length > MAX_HOSTS || !v.every(isIpv4)) return false
  const numbers = v.map((a) => ipaddr.IPv4.parse(a).toByteArray().reduce((n, b) => n * 256 + b, 0))
  return numbers.every((n, i) => i === 0 || n > numbers[i - 1]!)
}

function isPortList(v: unknown): v is number[] {
  return Array.isArray(v) && v.length <= 1024 && v.every((p, i) => Number.isInteger(p) && p >= 1 && p <= 65535 && (i === 0 || p > v[i - 1]))
}
