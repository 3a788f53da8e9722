import ipaddr from 'ipaddr.js'
import type { Config } from '../../config/config'
import { SWARM_DATA_PORT, SWARM_GOSSIP_PORT, SWARM_PORT } from '../runtime/swarm-membership'
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
 * (the sites' networks on every node are cut from it), no public edge, since none runs there, and
 * the control plane's private address (cluster.address) guarded but for the edge's ports: a site
 * on a node reaches the control plane as any visitor does, never its Swarm manager or what else
 * listens there. Not guarded when cluster.address is no IPv4 address (the rules are IPv4 ones).
 * The cluster's ports (clusterPortsOf) are closed at every address: other nodes' among them.
 */
export function nodeFirewallPolicyOf(config: Config): SiteFirewallPolicy | null {
  if (!config.containers.firewall) return null
  const control = config.cluster.address
  const guarded = ipaddr.IPv4.isValidFourPartDecimal(control) ? { address: control, openPorts: edgePortsOf(config) } : null
  return { pool: firewallPolicyOf(config).pool, publicEdge: null, guardedHost: guarded, closedPorts: clusterPortsOf(config) }
}

/**
 * The policy from the config: the subnet pool, and the public edge sites may reach like anyone;
 * with cluster.enabled, the cluster's ports closed at every address (the control plane's sites
 * would otherwise reach the nodes' Swarm and agent ports as this box).
 */
export function firewallPolicyOf(config: Config): SiteFirewallPolicy {
  const [address, bits] = ipaddr.parseCIDR(config.containers.subnetPool)
  const pool = `${ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${bits}`).toString()}/${bits}`
  const publicAddress = config.dns.publicIpv4
  return {
    pool,
    publicEdge: ['loopback', 'unspecified'].includes(ipaddr.parse(publicAddress).range()) ? null : { address: publicAddress, ports: edgePortsOf(config) },
    ...(config.cluster.enabled ? { closedPorts: clusterPortsOf(config) } : {}),
  }
}

/**
 * The ports every box of a cluster listens on for the others: the Swarm's (its manager port,
 * gossip over TCP and UDP, the VXLAN data path) and the agents' (cluster.agent_port, and the next
 * for the engine pass-through). Sites have no business there, wherever the address.
 */
function clusterPortsOf(config: Config): { tcp: number[]; udp: number[] } {
  const tcp = [SWARM_PORT, SWARM_GOSSIP_PORT, config.cluster.agentPort, config.cluster.agentPort + 1]
  return { tcp: [...new Set(tcp)].sort((a, b) => a - b), udp: [SWARM_DATA_PORT, SWARM_GOSSIP_PORT].sort((a, b) => a - b) }
}

/** The ports Berth's edge listens on (server.listen, tls.listen), ascending, once each. */
function edgePortsOf(config: Config): number[] {
  const ports = [config.server.listen.port, config.tls.listen?.port].filter((p): p is number => typeof p === 'number' && p > 0)
  return [...new Set(ports)].sort((a, b) => a - b)
}
