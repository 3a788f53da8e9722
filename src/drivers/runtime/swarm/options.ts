import type { ClusterNode, NodeLink } from '../../cluster/types'
import type { Logger } from '../../../lib/logger'

/** What ClusterRuntime (./cluster-runtime.ts) is built from (compose/cluster.ts). */
export interface ClusterRuntimeOptions {
  /** This box's engine: the Swarm manager, and the control node's engine. */
  managerSocket: string
  instanceId: string
  subnetPool: string
  /** Process limit used when a spec carries none. */
  pidsLimit: number
  /** This box's private address (cluster.address): the Swarm advertise address at `swarm init`. */
  advertiseAddress: string
  /** The nodes other than the control plane, from the store. */
  nodes: () => ClusterNode[]
  /** Reaches the nodes' engines and agents (drivers/cluster/link.ts). */
  link: NodeLink
  /** The images the disks helper may run on each node (../site-disks.ts): the first the node holds, else the first the manager holds, carried there. */
  helperImages?: string[]
  log: Logger
  /** How long a site's task may take to run (image on the node, network, start); default 60 s. */
  startWithinMs?: number
}
