import type Docker from 'dockerode'
import type { Logger } from '../../../lib/logger'
import { AgentAnswerError, callAgent } from '../../../node-agent/client/calls'
import type { ClusterNode, NodeLink } from '../../cluster/types'
import { SITE_PORT } from '../site-container'
import { RuntimeUnavailableError, SiteNotRunnableError, type SiteEndpoint } from '../types'
import type { Engine } from './node-engines'

/**
 * Site endpoints in a cluster: a container on the control node is reached at its address, as
 * on one box; one on another node through the port its agent forwards to it
 * (the agent's openForward route, accepting the control plane's address only), so the endpoint is
 * `{ node address, forward port }` and the edge is unchanged. The agent is asked again only for
 * another container (Swarm replaced the task, or the site came back to the node).
 */
export class Forwards {
  private known = new Map<string, { nodeId: string; containerId: string; target: string; port: number }>()

  constructor(private link: NodeLink, private nodes: () => ClusterNode[], private log: Logger) {}

  async endpointOf(engine: Engine, network: string, slug: string, info: Docker.ContainerInspectInfo): Promise<SiteEndpoint> {
    const net = info.NetworkSettings.Networks?.[network]
    const address = net?.IPAddress || net?.IPAMConfig?.IPv4Address
    if (!address) throw new SiteNotRunnableError(`The site '${slug}' has no address on its network yet.`)
    if (!engine.node) return { containerId: info.Id, address, port: SITE_PORT }
    const port = await this.to(engine.node, slug, info.Id, address)
    return { containerId: info.Id, address: engine.node.address, port }
  }

  /**
   * The forward's port, asked of the agent unless it was set for this very container. Keyed by
   * container, not only by address: a forward closed while the cache still had it (a node
   * forgotten and asked again, an agent restarted, a drop that did not reach the agent) must not
   * be handed to a later container of the site on the node, which often gets the same address
   * back.
   */
  private async to(node: ClusterNode, slug: string, containerId: string, target: string): Promise<number> {
    const known = this.known.get(slug)
    if (known && known.nodeId === node.id && known.containerId === containerId && known.target === target) return known.port
    const { port } = await callAgent(this.link, node, 'openForward', { params: { slug }, body: { address: target, port: SITE_PORT } }).catch((err: unknown) => {
      if (err instanceof AgentAnswerError) throw new RuntimeUnavailableError(`Node ${node.id} would not forward to '${slug}' (${err.message}).`)
      throw err
    })
    this.known.set(slug, { nodeId: node.id, containerId, target, port })
    return port
  }

  /**
   * The agent of `nodeId` restarted without its forwards: each one known there is asked for again
   * at once, all together. Left to each site's next request, the first one asked would replace the
   * former agent's kernel rules (which carried every site of the node meanwhile) by its own alone,
   * and the node's other sites would be refused until theirs came (seen: a 502 right after an agent
   * restart). A forward that cannot be set now is asked for by the site's next endpointOf.
   */
  forgetNode(nodeId: string): Promise<void> {
    const node = this.nodes().find((n) => n.id === nodeId)
    const again: Promise<unknown>[] = []
    for (const [slug, known] of this.known) {
      if (known.nodeId !== nodeId) continue
      this.known.delete(slug)
      if (node) {
        again.push(this.to(node, slug, known.containerId, known.target).catch((err) => {
          this.log.warn('could not set a forward again after its node\'s agent restarted; the site\'s next request asks', { site: slug, node: nodeId, error: (err as Error).message })
        }))
      }
    }
    return Promise.all(again).then(() => undefined)
  }

  /** Closes the site's forward on the node it was last set on, else on `nodeId` (best effort). */
  async drop(slug: string, nodeId?: string): Promise<void> {
    const known = this.known.get(slug)
    this.known.delete(slug)
    const on = known?.nodeId ?? nodeId
    const node = on ? this.nodes().find((n) => n.id === on) : undefined
    if (!node) return
    await callAgent(this.link, node, 'closeForward', { params: { slug } })
      .catch((err) => this.log.warn('could not close a forward', { site: slug, node: node.id, error: (err as Error).message }))
  }
}
