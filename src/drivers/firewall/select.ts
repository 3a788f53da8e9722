import ipaddr from 'ipaddr.js'
import type { Config } from '../../config/config'
import { SWARM_DATA_PORT, SWARM_GOSSIP_PORT, SWARM_PORT } from '../runtime/swarm-membership'
import { IptablesFirewall } from './iptables'
import type { SiteFirewall, SiteFirewallPolicy } from './types'

/** What the site firewall needs of a cluster's node: where its agent, engine pass-through and forwards listen. */
export interface FirewalledNode {
  address: string
  agentPort: number
}

/**
 * The cluster's nodes not removed, as the policies follow them (read at each keeping pass; the
 * control plane's cache of the store's nodes). None on the single box.
 */
export type NodeList = () => FirewalledNode[]

const NO_NODES: NodeList = () => []

/**
 * The site firewall the config asks for (`containers.firewall`), or null when it is off. In a
 * cluster its policy follows `nodes`: each keeping pass makes the rules of the nodes as they are.
 *
 * @example
 * const firewall = selectFirewall(config) // IptablesFirewall for 10.231.0.0/16 by default
 */
export function selectFirewall(config: Config, nodes: NodeList = NO_NODES): SiteFirewall | null {
  return config.containers.firewall ? new IptablesFirewall(() => firewallPolicyOf(config, nodes())) : null
}

/**
 * The policy a node keeps (JoinAnswer.firewall), or null when the firewall is off: the same pool
 * (the sites' networks on every node are cut from it), no public edge, since none runs there, and
 * the control plane's private address (cluster.address) guarded but for the edge's ports: a site
 * on a node reaches the control plane as any visitor does, never its Swarm manager or what else
 * listens there. Not guarded when cluster.address is no IPv4 address (the rules are IPv4 ones).
 * The cluster's ports (clusterPortsOf) are closed at every address: other nodes' among them; and
 * outbound SMTP is refused as on the control plane (refusedPortsOf).
 */
export function nodeFirewallPolicyOf(config: Config, nodes: FirewalledNode[] = []): SiteFirewallPolicy | null {
  if (!config.containers.firewall) return null
  const control = config.cluster.address
  const guarded = ipaddr.IPv4.isValidFourPartDecimal(control) ? { address: control, openPorts: edgePortsOf(config) } : null
  return { pool: firewallPolicyOf(config).pool, publicEdge: null, guardedHost: guarded, closedPorts: clusterPortsOf(config, nodes), blockedHosts: blockedHostsOf(config, nodes), ...refusedPortsOf(config) }
}

/**
 * The policy from the config: the subnet pool, the public edge sites may reach like anyone, and
 * outbound SMTP refused (refusedPortsOf);
 * with cluster.enabled, the cluster's ports closed at every address (the control plane's sites
 * would otherwise reach the nodes' Swarm and agent ports as this box) and every node's private
 * address blocked (its forwards accept this box's address, which the sites leave with).
 */
export function firewallPolicyOf(config: Config, nodes: FirewalledNode[] = []): SiteFirewallPolicy {
  const [address, bits] = ipaddr.parseCIDR(config.containers.subnetPool)
  const pool = `${ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${bits}`).toString()}/${bits}`
  const publicAddress = config.dns.publicIpv4
  return {
    pool,
    publicEdge: ['loopback', 'unspecified'].includes(ipaddr.parse(publicAddress).range()) ? null : { address: publicAddress, ports: edgePortsOf(config) },
    ...(config.cluster.enabled ? { closedPorts: clusterPortsOf(config, nodes), blockedHosts: blockedHostsOf(config, nodes) } : {}),
    ...refusedPortsOf(config),
  }
}

/** Outbound SMTP, TCP 25, the port mail servers take mail from each other on. */
export const SMTP_PORT = 25

/**
 * The TCP ports sites may not reach anywhere: SMTP (25) unless containers.outbound_smtp opens
 * it. A compromised site relaying spam straight to other mail servers puts the box's address on
 * every blocklist; submission (465, 587) authenticates the sender at a mail provider and stays
 * open. Absent when nothing is refused.
 */
function refusedPortsOf(config: Config): Pick<SiteFirewallPolicy, 'refusedTcpPorts'> {
  return config.containers.outboundSmtp ? {} : { refusedTcpPorts: [SMTP_PORT] }
}

/**
 * The ports every box of a cluster listens on for the others: the Swarm's (its manager port,
 * gossip over TCP and UDP, the VXLAN data path) and the agents' (cluster.agent_port, and the next
 * for the engine pass-through, and each node's own: one joined with `--port` listens elsewhere).
 * Sites have no business there, wherever the address.
 */
function clusterPortsOf(config: Config, nodes: FirewalledNode[]): { tcp: number[]; udp: number[] } {
  const agents = [config.cluster.agentPort, ...nodes.map((n) => n.agentPort)].flatMap((port) => [port, port + 1])
  const tcp = [SWARM_PORT, SWARM_GOSSIP_PORT, ...agents]
  return { tcp: [...new Set(tcp)].sort((a, b) => a - b), udp: [SWARM_DATA_PORT, SWARM_GOSSIP_PORT].sort((a, b) => a - b) }
}

/**
 * The nodes' private addresses (IPv4 ones: the rules are IPv4), ascending, once each; never
 * cluster.address itself, which a node's policy guards with the edge's ports open.
 */
function blockedHostsOf(config: Config, nodes: FirewalledNode[]): string[] {
  const addresses = new Set(nodes.map((n) => n.address).filter((a) => ipaddr.IPv4.isValidFourPartDecimal(a) && a !== config.cluster.address))
  const value = (a: string) => ipaddr.IPv4.parse(a).toByteArray().reduce((n, b) => n * 256 + b, 0)
  return [...addresses].sort((a, b) => value(a) - value(b))
}

/** The ports Berth's edge listens on (server.listen, tls.listen), ascending, once each. */
function edgePortsOf(config: Config): number[] {
  const ports = [config.server.listen.port, config.tls.listen?.port].filter((p): p is number => typeof p === 'number' && p > 0)
  return [...new Set(ports)].sort((a, b) => a - b)
}
