import { isIpAddress } from '../../lib/ip'

/** A DNS host name: labels of letters, digits and inner dashes, 1 to 63 each, 253 in all. */
const HOST_NAME = /^(?=.{1,253}$)(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/

/**
 * A node's public address (`berth node join --public-address`, `berth nodes set`): where the
 * internet reaches the node, which the SSH view of its sites gives as their host (their SSH
 * ports are published on the node). An IP address or a DNS name; what is wrong with `value`, or
 * null when it is one.
 *
 * @example
 * publicAddressProblem('203.0.113.7') // null
 * publicAddressProblem('box-b.example.net') // null
 * publicAddressProblem('http://box-b') // 'a public address is an IP address or a host name ...'
 */
export function publicAddressProblem(value: unknown): string | null {
  if (typeof value === 'string' && (isIpAddress(value) || (HOST_NAME.test(value) && !/^[0-9.]+$/.test(value)))) return null
  return 'a public address is an IP address or a host name (203.0.113.7, box-b.example.net) where the internet reaches the node: no scheme, port or path.'
}
