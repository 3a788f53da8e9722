import ipaddr from 'ipaddr.js'
import type { Config } from '../../config/config'
import { IptablesFirewall } from './iptables'
import type { SiteFirewall, SiteFirewallPolicy } from './types'

/**
 * The site firewall the config asks for (`containers.firewall`), or null when it is off.
 *
 * @example
 * const firewall = selectFirewall(config) // IptablesFirewall for 10.231.0.0/16 by default
 */
export function selectFirewall(config: Config): SiteFirewall | null {
  return config.containers.firewall ? new IptablesFirewall(firewallPolicyOf(config)) : null
}

/**
 * The policy a node keeps (JoinAnswer.firewall), or null when the firewall is off: the same pool
 * (the sites' networks on every node are cut from it), and no public edge, since none runs there.
 */
export function nodeFirewallPolicyOf(config: Config): SiteFirewallPolicy | null {
  return config.containers.firewall ? { pool: firewallPolicyOf(config).pool, publicEdge: null } : null
}

/** The policy from the config: the subnet pool, and the public edge sites may reach like anyone. */
export function firewallPolicyOf(config: Config): SiteFirewallPolicy {
  const [address, bits] = ipaddr.parseCIDR(config.containers.subnetPool)
  const pool = `${ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${bits}`).toString()}/${bits}`
  const publicAddress = config.dns.publicIpv4
  const ports = [config.server.listen.port, config.tls.listen?.port].filter((p): p is number => typeof p === 'number' && p > 0)
  return {
    pool,
    publicEdge: ['loopback', 'unspecified'].includes(ipaddr.parse(publicAddress).range()) ? null : { address: publicAddress, ports: [...new Set(ports)].sort((a, b) => a - b) },
  }
}
