import type { NodeState } from '../../core/enums'
import type { SiteFirewallPolicy } from '../firewall/types'
import type { SiteDiskSpec } from '../runtime/types'

/**
 * Sites across nodes on Docker Swarm (issue 28; docs/cluster.md). The contracts the parts share:
 *
 * - The **control plane** is the Berth that holds the store and the public edge; its box is the
 *   Swarm's manager and a node too (id CONTROL_NODE, no agent: it reaches its own engine and
 *   folders directly).
 * - A **node** is a box joined with `berth node join`; it runs the **agent** (`berth node serve`,
 *   from berth-node.service), which listens on the node's private address under mutual TLS:
 *   - `https://{address}:{agentPort}`: the agent's own API (AGENT_ROUTES of src/node-agent/contract/routes.ts);
 *   - `https://{address}:{agentPort + 1}`: its engine's API, passed through byte for byte to the
 *     local Docker socket (exec with a TTY, archives, events, stats, images/load: what a Swarm
 *     manager cannot reach on a worker, moby#27552).
 * - **TLS**: the cluster keeps two CAs in the control plane's data folder (`cluster/`): the node CA
 *   signs each node's server certificate at its join (CN = the node's id, SAN = its address); the
 *   client CA signs the control plane's client certificate. An agent accepts only clients with a
 *   certificate of the client CA, so a node's own certificate opens no other node. The control
 *   plane accepts a node only when its certificate chains to the node CA **and** its SHA-256
 *   fingerprint is the one recorded at the join (`nodes.cert_fingerprint`): a node removed
 *   (`berth nodes remove`, state `removed`) or showing any other certificate is refused.
 */

/** The control plane's own box, as a node: it runs sites too, without an agent. */
export const CONTROL_NODE = 'control'

/** A node as the store keeps it (table `nodes`). */
export interface ClusterNode {
  id: string
  name: string
  address: string
  agentPort: number
  swarmNodeId: string | null
  certFingerprint: string
  certSerial: string
  state: NodeState
  memoryBytes: number
  cpus: number
  joinedAt: number
  lastSeenAt: number | null
}

/** The control plane's side of mutual TLS with the agents. PEM text. */
export interface ControlTls {
  /** The node CA: every agent's certificate chains to it. */
  nodeCa: string
  /** The control plane's client certificate (client CA) and its key. */
  cert: string
  key: string
}

/** The agent's side of mutual TLS, as written by `berth node join`. PEM text. */
export interface AgentTls {
  /** The client CA: only the control plane's certificate chains to it. */
  clientCa: string
  /** This node's certificate (node CA) and its key. */
  cert: string
  key: string
}

/** `POST /cluster/v1/join` on the control plane's API listener: what a joining node sends. */
export interface JoinRequest {
  /** From `berth nodes token`; single use, expires (cluster.join_token_minutes). */
  token: string
  /** A PEM certificate request for the node's key (made on the node; the key never leaves it). */
  csr: string
  /** Host name, shown by `berth nodes list`. */
  name: string
  /** The node's address on the private network. */
  address: string
  agentPort: number
  memoryBytes: number
  cpus: number
  /** Where the internet reaches the node (`--public-address`): the SSH view's host for its sites. Optional. */
  publicAddress?: string | null
}

/** The control plane's answer to a join. */
export interface JoinAnswer {
  nodeId: string
  /** The node's certificate (node CA), for its agent's listener. */
  certificate: string
  /** The client CA the agent accepts callers of. */
  clientCa: string
  /** `docker swarm join --token {swarmToken} {managerAddress}:2377`. */
  swarmToken: string
  managerAddress: string
  /** The only address the agent accepts calls and forwarded traffic from (cluster.address). */
  controlAddress: string
  /**
   * The site firewall the node keeps (`berth node serve`, as berth serve does on the control
   * plane): the control plane's containers.subnet_pool, from which the sites' networks on every
   * node are cut, no public edge (none runs on a node), and cluster.address guarded but for the
   * edge's ports (the node's sites stay off the Swarm manager). Null when containers.firewall = false.
   */
  firewall: SiteFirewallPolicy | null
}

/** An agent's info (its info route, node-agent/contract/routes.ts, checks its shape against this type). */
export interface AgentInfo {
  nodeId: string
  /** The node's id in the Swarm (`docker info` .Swarm.NodeID); null before its engine joined. */
  swarmNodeId: string | null
  memoryBytes: number
  cpus: number
  version: string
  engineVersion: string
  /**
   * A random id of the agent's process, new at each start: a restarted agent has none of the
   * forwards it had, and the control plane, seeing another id, asks for them again.
   */
  instance?: string
  /**
   * The site firewall policy the node keeps (null: none). Absent from agents that cannot be
   * given one (the setFirewall route): the control plane then leaves them as they are.
   */
  firewall?: SiteFirewallPolicy | null
}

/**
 * The version in the agent's paths (`/v1/...`). Its routes, their requests and answers are the
 * contract of src/node-agent/contract/routes.ts (AGENT_ROUTES), which its router and the control
 * plane's client are both made from.
 */
export const AGENT_API_VERSION = 'v1'

/**
 * How the control plane reaches a node's agent (node-agent/client/link.ts). Every call checks the
 * node's certificate as the header above says; a refused node throws NodeRefusedError, one that
 * does not answer NodeUnreachableError.
 */
export interface NodeLink {
  /** A request to the node's agent API (`path` starts with `/v1/`): the transport under node-agent/client/calls.ts, which builds every path from the contract. */
  fetch(node: ClusterNode, path: string, init?: RequestInit): Promise<Response>
  /** dockerode-compatible options for the node's engine through its agent (protocol https, ca, cert, key, host, port). */
  engineOptions(node: ClusterNode): EngineConnection | EngineSocket
}

/** A node's engine on a Unix socket of this box: the lab's private engines in tests (test/lab-swarm). */
export interface EngineSocket {
  socketPath: string
}

/** What dockerode / docker-modem need to reach an engine over TLS. */
export interface EngineConnection {
  protocol: 'https'
  host: string
  port: number
  ca: string
  cert: string
  key: string
  /** Pins the node's certificate (checkServerIdentity): throws for any other. */
  checkServerIdentity: (host: string, cert: { fingerprint256?: string; raw?: Buffer }) => Error | undefined
}

/** The node refused: wrong, unknown or revoked certificate (or it is removed). */
export class NodeRefusedError extends Error {}
/** The node's agent does not answer (down, or the network between). */
export class NodeUnreachableError extends Error {}

/**
 * Where a remote site's home is, as ContainerRuntime.homePath answers it for a site on a node
 * other than the control plane: `node:{nodeId}:{volume}`. Drivers that take a home path
 * (openSiteHome, the tar work, disk usage, HostSiteFiles) send such a path through the node's
 * agent; a plain absolute path is a folder on this box, as on a single box.
 */
export const NODE_HOME_PREFIX = 'node:'

export function nodeHomePath(nodeId: string, volume: string): string {
  return `${NODE_HOME_PREFIX}${nodeId}:${volume}`
}

/** `{ nodeId, volume }` of a node home path, or null for a folder on this box. */
export function parseNodeHome(path: string): { nodeId: string; volume: string } | null {
  if (!path.startsWith(NODE_HOME_PREFIX)) return null
  const [nodeId, volume] = path.slice(NODE_HOME_PREFIX.length).split(':')
  return nodeId && volume ? { nodeId, volume } : null
}

/**
 * What the cluster runtime adds to ContainerRuntime (drivers/runtime/swarm): placement, read and
 * changed by the node operations (domain/cluster: move, drain, evacuate).
 */
export interface Placement {
  /** The node the site's service is pinned to, or null when the site has no service. */
  nodeOf(slug: string): Promise<string | null>
  /** Every site service's node (slug → node id), from the Swarm manager. */
  placements(): Promise<Map<string, string>>
  /**
   * Pins the site to `nodeId` from now on: its next ensureSite runs it there, with the volume
   * on that node (empty when new there). The service on the old node is removed; the old
   * node's volume stays until removeVolumeOn.
   */
  placeOn(slug: string, nodeId: string): Promise<void>
  /**
   * Makes the site's volume on the node it is placed on (placeOn) without starting anything, so
   * that its files can be put back before its first start there; a no-op for an unplaced site.
   */
  prepareSite(site: SiteDiskSpec): Promise<void>
  /**
   * Puts `image` on `nodeId`'s engine as the manager has it (no registry: the manager's copy is
   * streamed there), so that a site's switch to that node does not wait for it. True when it was
   * carried now, false when the node had it already (two inspects). Throws when the manager lacks
   * it or the node's engine does not answer.
   */
  carryImage(image: string, nodeId: string): Promise<boolean>
  /** Removes the site's volume (files) on one node; a no-op when it has none there. */
  removeVolumeOn(slug: string, nodeId: string): Promise<void>
  /**
   * Chooses a node for a new site: the active node with the most free memory that fits
   * `memoryMb` (draining, down and removed nodes never), the control plane counted as one.
   */
  choose(memoryMb: number, except?: string[]): Promise<string>
  /**
   * Removes a node of the Swarm from the manager's list (`docker node rm --force`): a removed
   * Berth node's, so a box joined again is not listed twice. A no-op when the Swarm has it not.
   */
  removeSwarmNode(swarmNodeId: string): Promise<void>
}
