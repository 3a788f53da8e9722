import type Docker from 'dockerode'
import type { Logger } from '../../../lib/logger'
import { CONTROL_NODE, type ClusterNode, type NodeLink } from '../../cluster/types'
import { openEngine } from '../engine'
import type { Engine } from '../site-runtime'
import { SiteNetworks } from '../site-network'
import { RuntimeUnavailableError } from '../types'

export type { Engine }

/**
 * The engines of the cluster's nodes: the manager's own for the control node, each other node's
 * through its agent (NodeLink.engineOptions), one client each, made again when the node's address
 * or certificate changed. A removed or unknown node is RuntimeUnavailableError.
 */
export class NodeEngines {
  private engines = new Map<string, Engine>()
  private networks = new Map<string, SiteNetworks>()

  constructor(
    private control: Engine,
    private controlSwarmId: string,
    /** The manager's Engine API version ("1.41"): what a service's spec can say (hardening.ts). */
    readonly managerApi: string,
    private opts: { nodes: () => ClusterNode[]; link: NodeLink; subnetPool: string; log: Logger },
  ) {}

  static async forManager(socketPath: string, swarmNodeId: string, opts: NodeEngines['opts']): Promise<NodeEngines> {
    const control: Engine = { nodeId: CONTROL_NODE, node: null, docker: await openEngine(socketPath), bulk: await openEngine(socketPath, 0), address: socketPath, key: socketPath }
    const { ApiVersion } = await control.docker.version()
    return new NodeEngines(control, swarmNodeId, String(ApiVersion), opts)
  }

  get manager(): Engine {
    return this.control
  }

  async of(nodeId: string): Promise<Engine> {
    if (nodeId === CONTROL_NODE) return this.control
    const node = this.opts.nodes().find((n) => n.id === nodeId)
    if (!node || node.state === 'removed') throw new RuntimeUnavailableError(`Node ${nodeId} is not in the cluster.`)
    const address = this.opts.link.engineOptions(node)
    const key = JSON.stringify([node.address, node.agentPort, node.certFingerprint, 'socketPath' in address ? address.socketPath : ''])
    const known = this.engines.get(nodeId)
    if (known?.key === key) return { ...known, node }
    const engine: Engine = { nodeId, node, docker: await openEngine(address), bulk: await openEngine(address, 0), address, key }
    this.engines.set(nodeId, engine)
    return engine
  }

  /** The control node's engine and every node's but removed ones. */
  async all(): Promise<Engine[]> {
    const nodes = this.opts.nodes().filter((n) => n.state !== 'removed')
    return [this.control, ...(await Promise.all(nodes.map((n) => this.of(n.id))))]
  }

  /** The site networks of one engine (their subnet choice keeps its own bookkeeping). */
  networksOf(engine: Engine): SiteNetworks {
    let networks = this.networks.get(engine.key)
    if (!networks) {
      networks = new SiteNetworks(engine.docker, this.opts.subnetPool, this.opts.log)
      this.networks.set(engine.key, networks)
    }
    return networks
  }

  /** The node's id in the Swarm: the manager's own, or the one the agent reported at its join. */
  async swarmIdOf(engine: Engine): Promise<string> {
    if (!engine.node) return this.controlSwarmId
    if (engine.node.swarmNodeId) return engine.node.swarmNodeId
    const info = await engine.docker.info()
    if (!info.Swarm?.NodeID) throw new RuntimeUnavailableError(`Node ${engine.nodeId} has not joined the swarm.`)
    return info.Swarm.NodeID
  }
}
