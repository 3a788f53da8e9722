/**
 * The node operations for an admin command (`berth nodes ...`), in its own process, over the whole
 * composition: a leaf of compose/ (it imports index.ts; nothing in compose/ imports it), so the
 * composition has no circle through it.
 */
import type { Config } from '../config/config'
import type { ClusterNode } from '../drivers/cluster/types'
import { acceptsConnection } from '../drivers/runtime/first-answer'
import { SWARM_GOSSIP_PORT } from '../drivers/runtime/swarm-membership'
import type { Logger } from '../lib/logger'
import { agentAnswers, buildNodeOps, type NodeOps, placementOf } from './cluster-ops'
import { buildServices } from './index'

/** Why a node command cannot run on this box: no cluster. */
export class NoClusterError extends Error {}

/**
 * The node operations for an admin command, in its own process: the services `berth serve`
 * builds (the cluster runtime when cluster.enabled), nothing started (no listener, job runner or
 * background pass: `berth serve` may run beside and sees the store's changes within
 * EXTERNAL_CHECK_MS). Throws NoClusterError on a single box.
 */
export function buildNodeOpsAdmin(config: Config, log: Logger): NodeOps & { close(): Promise<void> } {
  if (!config.cluster.enabled) throw new NoClusterError('this box runs no cluster (cluster.enabled is false); see docs/cluster.md, "Turning it on"')
  const s = buildServices(config, { log, firewall: null })
  const jobsStopped = s.jobs.stop()
  const close = async () => {
    await jobsStopped
    s.store.close()
  }
  const placement = placementOf(s.runtime)
  if (!placement || !s.cluster) {
    void close()
    throw new NoClusterError('cluster.enabled is true but the runtime built has no placement (this binary runs sites on one engine only)')
  }
  // The box still takes connections on the Swarm's gossip port: its engine runs (and its sites may
  // serve) though its agent is silent. Asked directly: the manager's view of a powered-off node
  // stays `ready` for several seconds after berth serve has marked it down.
  const engineUp = (node: ClusterNode) => acceptsConnection({ address: node.address, port: SWARM_GOSSIP_PORT }, 2_000)
  return { ...buildNodeOps(s, placement, agentAnswers(s.cluster.link), { engineUp }), close }
}

