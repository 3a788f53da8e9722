import type { NodeState } from '../../core/enums'
import { CONTROL_NODE, type Placement } from '../../drivers/cluster/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import { conflict, invalid, notFound } from '../errors'
import type { PlansService } from '../plans'
import { publicAddressProblem } from './public-address'
import type { NodesRepository, StoredNode } from './repository'
import type { SiteTransfer } from './site-transfer'
import type { SiteMover } from './move'
import type { DrainView, EvacuatedSite, EvacuationView, NodeView } from './views'
import type { SiteRecords } from '../sites'
import { noSteps, type OnStep } from './steps'

const MIB = 1024 * 1024
const PAST: Record<string, string> = { drain: 'drained', undrain: 'undrained', remove: 'removed', evacuate: 'evacuated' }

export interface NodesServiceDeps {
  nodes: Pick<NodesRepository, 'list' | 'find' | 'setState' | 'setPublicAddress'>
  placement: Pick<Placement, 'placements' | 'choose' | 'removeSwarmNode'>
  sites: Pick<SiteRecords, 'listLive' | 'findLiveBySlug'>
  plans: Pick<PlansService, 'get'>
  transfer: Pick<SiteTransfer, 'newestUsable' | 'bringUp'>
  /** `berth sites move`'s path: a drained node whose agent answers is emptied by moves (files carried over). */
  mover: Pick<SiteMover, 'move'>
  /**
   * True when the node's agent answers now (`GET /v1/info`, which asks its engine too, within a
   * few seconds): a node that answers is emptied by moves, never evacuated.
   */
  answers(node: StoredNode): Promise<boolean>
  /**
   * True when the node's box still answers (its engine, on the Swarm's gossip port): its sites may
   * still serve (the kernel forwards outlive the agent) though its agent is silent. Absent: unknown.
   */
  engineUp?(node: StoredNode): Promise<boolean>
  /** The control plane as a node: config cluster.address, and its box's memory and processors. */
  control: { address: string; memoryBytes: number; cpus: number; publicAddress?: string | null }
  clock: Clock
  log: Logger
}

/**
 * The hoster's operations on the nodes of a cluster (docs/cluster.md): list them with their
 * sites, drain one (no new site goes there; those it runs stay), remove an empty one (its
 * certificate is refused from then on: the link checks the state), and evacuate a lost one
 * (its sites come back on the other nodes from their newest archive). The control plane is the
 * node `control`: listed first, never drained, removed or evacuated.
 */
export class NodesService {
  constructor(private d: NodesServiceDeps) {}

  /** Every node, the control plane first, each with its state, capacity, used memory and sites. */
  async list(): Promise<NodeView[]> {
    const placed = await this.d.placement.placements()
    const live = new Map(this.d.sites.listLive().map((s) => [s.slug, s]))
    const byNode = new Map<string, string[]>()
    for (const [slug, node] of placed) byNode.set(node, [...(byNode.get(node) ?? []), slug])
    const view = (node: Omit<NodeView, 'sites' | 'used_memory_bytes'>): NodeView => {
      const slugs = (byNode.get(node.id) ?? []).sort()
      const used = slugs.reduce((sum, slug) => sum + this.memoryMbOf(live.get(slug)) * MIB, 0)
      return { ...node, used_memory_bytes: used, sites: slugs }
    }
    const control = this.d.control
    return [
      view({ id: CONTROL_NODE, name: CONTROL_NODE, address: control.address, public_address: control.publicAddress ?? null, state: 'active', capacity: { memory_bytes: control.memoryBytes, cpus: control.cpus }, joined_at: null, last_seen_at: null, removed_at: null }),
      ...this.d.nodes.list().map((n) => view(nodeFields(n))),
    ]
  }

  /** One node's view; 404 (param `node`) for an unknown one. */
  async show(id: string): Promise<NodeView> {
    if (id !== CONTROL_NODE) this.requireNode(id)
    return (await this.list()).find((n) => n.id === id)!
  }

  /**
   * Sets where the internet reaches the node (an IP address or a host name; null forgets it):
   * the SSH view of its sites gives it as their host from then on. 422 (param `public_address`)
   * for anything else, 404 for an unknown node, 422 for the control plane (its is ssh.host).
   */
  async setPublicAddress(id: string, value: string | null): Promise<NodeView> {
    if (id === CONTROL_NODE) throw invalid('node', 'The control plane\'s public address is ssh.host in its config (berth.toml); give a node id from berth nodes list.')
    this.requireNode(id)
    const problem = value === null ? null : publicAddressProblem(value)
    if (problem) throw invalid('public_address', `${problem[0]!.toUpperCase()}${problem.slice(1)}`)
    this.d.nodes.setPublicAddress(id, value)
    this.d.log.info('node public address set', { node: id, public_address: value })
    return this.show(id)
  }

  /**
   * No new site is placed on the node from now on (Placement.choose skips it); the sites it runs
   * stay and keep serving, until moved. Idempotent. A removed node is refused (409).
   */
  async drain(id: string): Promise<NodeView> {
    const node = this.requireNode(id, 'drain')
    if (node.state === 'removed') throw conflict(`Node ${id} is removed; there is nothing to drain.`, 'node')
    if (node.state !== 'draining') {
      this.d.nodes.setState(id, ['joining', 'active', 'down'], 'draining')
      this.d.log.info('node drained: no new site is placed there', { node: id, was: node.state })
    }
    return this.show(id)
  }

  /**
   * Drains the node, then moves each of its sites to the active node with the most free memory
   * that fits its plan, by `berth sites move`'s path (a fresh archive, the switch, its files put
   * back there: nothing lost but the seconds between the archive and the stop). One that cannot
   * be moved stays where it is, serving, with why; run it again to retry those.
   */
  async drainAndMove(id: string, onStep: OnStep = noSteps): Promise<DrainView> {
    await this.drain(id)
    const moves: DrainView['moves'] = []
    for (const slug of await this.sitesOn(id)) {
      const site = this.d.sites.findLiveBySlug(slug)
      if (!site) continue
      try {
        const to = await this.d.placement.choose(this.memoryMbOf(site), [id])
        onStep({ step: 'moving', slug, to })
        const moved = await this.d.mover.move(slug, to, onStep)
        moves.push({ slug, to, result: 'moved', unavailable_ms: moved.unavailable_ms, problem: null })
      } catch (err) {
        moves.push({ slug, to: null, result: 'failed', unavailable_ms: null, problem: (err as Error).message })
        onStep({ step: 'not_moved', slug, problem: (err as Error).message })
        this.d.log.error('could not move a site off a drained node; it stays there, serving', { site: slug, node: id, error: (err as Error).message })
      }
    }
    return { ...(await this.show(id)), moves }
  }

  /**
   * Puts a draining node back: placement may choose it again (active). Its sites never stopped,
   * so nothing else changes; no re-join. Idempotent for an active node; a down one (it turns
   * active by itself when its agent answers) and a removed one are refused (409).
   */
  async undrain(id: string): Promise<NodeView> {
    const node = this.requireNode(id, 'undrain')
    if (node.state === 'removed') throw conflict(`Node ${id} is removed: its certificate is refused for good. Join the box again (berth nodes token, then berth node join there) to use it.`, 'node')
    if (node.state === 'down') throw conflict(`Node ${id} is down, not draining: it turns active by itself once its agent answers again (berth nodes list shows when it last did).`, 'node')
    if (node.state === 'draining') {
      this.d.nodes.setState(id, ['draining'], 'active')
      this.d.log.info('node undrained: new sites and moves may go there again', { node: id })
    }
    return this.show(id)
  }

  /**
   * Removes a node that runs no site: state `removed`, its certificate refused by the control
   * plane from now on. One that still runs sites is refused (409) with what to do first.
   * Idempotent for a removed node.
   */
  async remove(id: string): Promise<NodeView> {
    const node = this.requireNode(id, 'remove')
    if (node.state !== 'removed') {
      const sites = await this.sitesOn(id)
      if (sites.length > 0) {
        throw conflict(`Node ${id} still runs ${sites.length} site(s) (${sites.join(', ')}): move them first (berth sites move SLUG --to NODE), or, if the node is lost, bring them back elsewhere with berth nodes evacuate ${id}.`, 'node')
      }
      this.d.nodes.setState(id, ['joining', 'active', 'draining', 'down'], 'removed', this.d.clock.now())
      this.d.log.info('node removed: its certificate is refused from now on', { node: id })
      // Its Swarm node too: a box joined again is a new one, and the old would stay listed (down) for good.
      if (node.swarmNodeId) {
        await this.d.placement.removeSwarmNode(node.swarmNodeId).catch((err) => {
          this.d.log.warn('could not remove a removed node from the Swarm; run docker node rm --force on the control plane', { node: id, swarm_node: node.swarmNodeId, error: (err as Error).message })
        })
      }
    }
    return this.show(id)
  }

  /**
   * Brings the sites of a lost node back on the other nodes, each from its newest archive (the
   * copy off the box when the local one is missing), and answers when each one's data is from
   * and how much time of changes is lost, or that it had none (it serves an empty home). The
   * node is left `draining`, so nothing is placed there again; remove it once it is empty. A
   * node whose agent answers now is refused whatever its state and `force` (drainAndMove empties
   * it losing nothing); one whose agent is silent but whose box answers needs `force`, and so does
   * one that is not `down` yet, unless it is `draining` (never marked down: a drained node, or one
   * an evacuation stopped in the middle left so) with its box silent too: that one is evacuated
   * (again).
   */
  async evacuate(id: string, opts: { force?: boolean; onStep?: OnStep } = {}): Promise<EvacuationView> {
    const node = this.requireNode(id, 'evacuate')
    if (node.state === 'removed') throw conflict(`Node ${id} is removed; its sites were moved off it before.`, 'node')
    // Asked now, whatever the store says: a drained node, or one berth serve saw down a moment
    // ago, may answer; its sites then keep every change through moves, never through archives.
    if (await this.d.answers(node)) {
      throw conflict(`Node ${id}'s agent answers (state ${node.state}): evacuating would bring its sites back from their last archives and lose what they wrote since. Empty it by moves instead, which carry the files over: berth nodes drain ${id} --move (or berth sites move SLUG --to NODE for each). Evacuation is for a node that does not answer; --force does not change this.`, 'node')
    }
    // Whether the box still answers (its engine): null when it cannot be asked. Not asked under --force.
    const boxUp = opts.force || !this.d.engineUp ? null : await this.d.engineUp(node)
    if (boxUp === true) {
      throw conflict(`Node ${id}'s agent does not answer, but its box still answers (its engine, on the Swarm's port 7946): its sites may well still run and serve (through the node's forwards), with changes their archives do not hold. Start its agent (systemctl start berth-node on the node), then empty it by moves: berth nodes drain ${id} --move. If the box is lost all the same, --force evacuates it: each site comes back from its newest archive and loses what it wrote since.`, 'node')
    }
    // A draining node is never marked down (the health monitor keeps a drained node draining, and
    // an evacuation stopped in the middle leaves it so): its agent and its box both silent now
    // are what `down` would say of it.
    if (!opts.force && node.state !== 'down' && !(node.state === 'draining' && boxUp === false)) {
      throw conflict(node.state === 'draining'
        ? `Node ${id}'s agent does not answer and it is draining, but whether its box is up could not be asked. If the box is lost, --force evacuates it: each site comes back from its newest archive and loses what it wrote since.`
        : `Node ${id}'s agent does not answer, but it is ${node.state}, not down yet: berth serve marks a node down after 6 s without an answer (berth nodes list shows its state); run this again then. If the box is lost, --force evacuates it now: each site comes back from its newest archive and loses what it wrote since.`, 'node')
    }
    this.d.nodes.setState(id, ['active', 'down'], 'draining')
    const sites: EvacuatedSite[] = []
    for (const slug of await this.sitesOn(id)) {
      const site = this.d.sites.findLiveBySlug(slug)
      if (site) sites.push(await this.evacuateSite(site, id, opts.onStep ?? noSteps))
    }
    this.d.log.info('node evacuated', { node: id, sites: sites.map((s) => `${s.slug}:${s.result}`) })
    return { node: id, sites }
  }

  private async evacuateSite(site: SiteRow, from: string, onStep: OnStep): Promise<EvacuatedSite> {
    const outcome: EvacuatedSite = { slug: site.slug, node: null, archive: null, data_from: null, lost_ms: null, result: 'failed', problem: null }
    try {
      const to = await this.d.placement.choose(this.memoryMbOf(site), [from])
      const choice = await this.d.transfer.newestUsable(site)
      onStep({ step: 'evacuating', slug: site.slug, to, archive: choice?.archive.id ?? null, data_from: choice ? iso(choice.archive.createdAt) : null })
      await this.d.transfer.bringUp(site, to, choice?.archive ?? null, { onStep })
      outcome.node = to
      if (choice) {
        Object.assign(outcome, { archive: { id: choice.archive.id, kind: choice.archive.kind, source: choice.source }, data_from: iso(choice.archive.createdAt), lost_ms: Math.max(0, this.d.clock.now() - choice.archive.createdAt), result: 'restored' })
      } else {
        Object.assign(outcome, { result: 'empty', problem: 'no archive of it was found, on this box or off it: it serves an empty home' })
      }
    } catch (err) {
      outcome.problem = (err as Error).message
      this.d.log.error('could not bring a site of an evacuated node back', { site: site.slug, node: from, error: outcome.problem })
    }
    onStep({ step: 'evacuated', slug: site.slug, node: outcome.node, result: outcome.result, problem: outcome.problem })
    return outcome
  }

  /** The node's row; 404 for an unknown id, 422 for the control plane (an operation it has not). */
  private requireNode(id: string, operation?: string): StoredNode {
    if (id === CONTROL_NODE && operation) throw invalid('node', `The control plane cannot be ${PAST[operation] ?? operation}: it holds the store and the edge. Give a node id from berth nodes list.`)
    const node = this.d.nodes.find(id)
    if (!node) throw notFound(`No node '${id}'; berth nodes list shows the nodes and their ids.`, 'node')
    return node
  }

  private async sitesOn(id: string): Promise<string[]> {
    return [...(await this.d.placement.placements())].filter(([, node]) => node === id).map(([slug]) => slug).sort()
  }

  private memoryMbOf(site: SiteRow | undefined): number {
    return site ? this.d.plans.get(site.planSlug).features.memory_mb : 0
  }
}

function nodeFields(n: StoredNode): Omit<NodeView, 'sites' | 'used_memory_bytes'> {
  return {
    id: n.id, name: n.name, address: n.address, public_address: n.publicAddress, state: n.state as NodeState,
    capacity: { memory_bytes: n.memoryBytes, cpus: n.cpus },
    joined_at: iso(n.joinedAt), last_seen_at: n.lastSeenAt === null ? null : iso(n.lastSeenAt), removed_at: n.removedAt === null ? null : iso(n.removedAt),
  }
}
