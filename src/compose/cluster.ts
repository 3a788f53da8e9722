/**
 * The cluster on the control plane (issue 28, docs/cluster.md), built only with `cluster.enabled`:
 *
 * - in the core (buildCore): the link to the nodes' agents (the control plane's certificate from
 *   the data folder's cluster/) and the Swarm runtime, ClusterRuntime, in place of DockerRuntime;
 * - in the areas (compose/areas.ts buildAreas): the sites' homes through the agents (node-homes.ts), the
 *   nodes' health monitor (which shows a down node's sites `recovering`), and the join's route
 *   when `berth serve` opened the PKI (prepareControlPlane).
 *
 * The admin's commands (berth nodes, berth sites move, berth sites shell) build the same core and
 * reach the same nodes, beside a running `berth serve`.
 */
import { clusterJoinHandler } from '../api/cluster/join'
import type { Config } from '../config/config'
import { JoinService, makeNodesRepository, type NodeHealth, type NodeHealthDeps } from '../domain/cluster'
import { AgentLink } from '../node-agent/client/link'
import { nodeHomes } from '../drivers/cluster/node-homes'
import { ClusterPki, readControlTls } from '../drivers/cluster/pki'
import type { ClusterNode, Placement } from '../drivers/cluster/types'
import type { HomeDrivers } from '../drivers/files/home-drivers'
import { nodeFirewallPolicyOf } from '../drivers/firewall/select'
import { ensureManager, swarmManagerOn } from '../drivers/runtime/swarm-membership'
import { ClusterRuntime } from '../drivers/runtime/swarm/cluster-runtime'
import { engineSecurity, noNewPrivilegesAdvice } from '../drivers/runtime/swarm/hardening'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { Store } from '../store/store'
import { buildNodeHealth, lateRecovering } from './cluster-ops'
import type { SiteRunner } from '../domain/sites'
import { helperImagesOf } from '../drivers/runtime/site-disks'

/** What the core holds of the cluster: how to reach the nodes, and who they are. */
export interface ClusterCore {
  link: AgentLink
  nodes: ReturnType<typeof makeNodesRepository>
  runtime: ClusterRuntime
  /** Which node each site runs on (the runtime's), for the node operations and the health monitor. */
  placement: Placement
  /** The nodes not removed, read again only when the cluster's tables changed (the site firewall's policies follow them). */
  liveNodes: () => ClusterNode[]
}

/**
 * `berth serve`'s part before the services are built: the cluster's PKI (made at the first start)
 * and this box's engine as the Swarm's manager (advertising cluster.address). Null with the cluster off.
 */
export async function prepareControlPlane(config: Config, log: Logger): Promise<ClusterPki | null> {
  if (!config.cluster.enabled) return null
  const pki = await ClusterPki.open(config.server.dataDir)
  const swarmNode = await ensureManager(config.containers.dockerSocket, config.cluster.address)
  log.info('this box is the cluster\'s control plane', { address: config.cluster.address, swarm_node: swarmNode })
  const advice = await engineSecurity(config.containers.dockerSocket).then((e) => noNewPrivilegesAdvice(e, 'control plane'), () => null)
  if (advice) log.warn('sites on Swarm run without no-new-privileges', { fix: advice })
  return pki
}

/** The link and the Swarm runtime, for buildCore; throws when `berth serve` has not made the PKI yet. */
export function buildClusterCore(config: Config, core: { store: Store; instanceId: string; log: Logger }): ClusterCore {
  const tls = readControlTls(config.server.dataDir)
  if (!tls) throw new Error("The cluster's certificates are not made yet: start 'berth serve' once with cluster.enabled = true (docs/cluster.md).")
  const nodes = makeNodesRepository(core.store)
  const link = new AgentLink(tls)
  const live = liveNodes(core.store, nodes)
  const runtime = new ClusterRuntime({
    managerSocket: config.containers.dockerSocket,
    instanceId: core.instanceId,
    subnetPool: config.containers.subnetPool,
    pidsLimit: config.containers.pidsLimit,
    advertiseAddress: config.cluster.address,
    nodes: live,
    link,
    helperImages: helperImagesOf(config.containers.images),
    log: core.log,
  })
  return { link, nodes, runtime, placement: runtime.placement, liveNodes: live }
}

/** The nodes not removed, read again only when the cluster's tables changed. */
function liveNodes(store: Store, repo: ReturnType<typeof makeNodesRepository>): () => ClusterNode[] {
  const version = store.versionOf(['cluster'])
  let seen = -1
  let nodes: ClusterNode[] = []
  return () => {
    const now = version()
    if (now !== seen) {
      nodes = repo.list({ live: true })
      seen = now
    }
    return nodes
  }
}

/** The homes on the nodes, through their agents (plain paths stay folders on this box). */
export function clusterHomes(cluster: ClusterCore): HomeDrivers {
  return nodeHomes({ link: cluster.link, node: (id) => cluster.nodes.find(id) })
}

export interface ClusterServices {
  /** The nodes' health monitor, ticked by berth serve (upkeep.ts followNodeHealth). */
  nodeHealth: NodeHealth
  /** POST /cluster/v1/join; null when the PKI was not opened (an admin command). */
  clusterJoin: ((request: Request) => Promise<Response>) | null
  /** The join listener's certificate (cluster.join_port serves the join over it); null with clusterJoin. */
  clusterJoinTls: { cert: string; key: string } | null
}

/** The health monitor (fed into the sites' views through `late`) and the join's route. */
export function buildClusterServices(
  config: Config,
  cluster: ClusterCore,
  s: { store: Store; clock: Clock; log: Logger; runner: SiteRunner; outages?: NodeHealthDeps['events'] },
  late: ReturnType<typeof lateRecovering>,
  pki: ClusterPki | null,
): ClusterServices {
  const nodeHealth = buildNodeHealth(s, {
    placement: cluster.placement, link: cluster.link, firewall: () => nodeFirewallPolicyOf(config, cluster.liveNodes()), forwardsLost: (nodeId) => cluster.runtime.forgetForwards(nodeId),
  })
  late.set(nodeHealth)
  const joins = pki && new JoinService(cluster.nodes, pki, swarmManagerOn(config.containers.dockerSocket), s.clock, {
    controlAddress: config.cluster.address,
    tokenMinutes: config.cluster.joinTokenMinutes,
    firewall: () => nodeFirewallPolicyOf(config, cluster.liveNodes()),
  })
  return { nodeHealth, clusterJoin: joins ? clusterJoinHandler(joins, s.log) : null, clusterJoinTls: pki ? pki.joinTls() : null }
}
