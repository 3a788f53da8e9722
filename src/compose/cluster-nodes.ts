/**
 * The nodes' side of the cluster on the control plane (issue 28): the PKI, the join and the link
 * to the agents. Built only with `cluster.enabled`; the Swarm must be initialised on this box's
 * engine first (drivers/runtime/swarm-membership.ts ensureManager, advertising cluster.address).
 */
import { clusterJoinHandler } from '../api/cluster/join'
import type { Config } from '../config/config'
import { JoinService } from '../domain/cluster/join'
import { NodesRepository } from '../domain/cluster/repository'
import { AgentLink } from '../drivers/cluster/link'
import { ClusterPki } from '../drivers/cluster/pki'
import { swarmManagerOn } from '../drivers/runtime/swarm-membership'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { Store } from '../store/store'

export interface ClusterNodes {
  pki: ClusterPki
  nodes: NodesRepository
  joins: JoinService
  /** How the control plane reaches every node's agent and engine. */
  link: AgentLink
  /** LISTENER_ROUTES' `cluster-join` target (ListenerTargets.clusterJoin). */
  joinRoute: (request: Request) => Promise<Response>
}

/** The PKI (made at the first start), the join service and route, the link; null with the cluster off. */
export async function buildClusterNodes(core: { config: Config; store: Store; clock: Clock; log: Logger }): Promise<ClusterNodes | null> {
  const { config, store, clock, log } = core
  if (!config.cluster.enabled) return null
  const pki = await ClusterPki.open(config.server.dataDir)
  const nodes = new NodesRepository(store)
  const joins = new JoinService(nodes, pki, swarmManagerOn(config.containers.dockerSocket), clock, {
    controlAddress: config.cluster.address,
    tokenMinutes: config.cluster.joinTokenMinutes,
  })
  return { pki, nodes, joins, link: new AgentLink(pki.controlTls()), joinRoute: clusterJoinHandler(joins, log) }
}
