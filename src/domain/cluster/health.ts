import type { AgentInfo, NodeLink, Placement } from '../../drivers/cluster/types'
import type { SiteFirewallPolicy } from '../../drivers/firewall/types'
import type { SiteEndpoint } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import { callAgent } from '../../node-agent/client/calls'
import type { SiteRunner } from '../sites'
import type { NodesRepository, StoredNode } from './repository'

/** How often each node's agent is asked (its info route). */
export const HEALTH_INTERVAL_MS = 2_000
/** A node whose agent has not answered for this long is down. */
export const DOWN_AFTER_MS = 6_000
/** One question's bound: a node that does not answer within it failed this round. */
const ASK_TIMEOUT_MS = 1_500
/** last_seen_at is written at most this often while nothing else changes (each write moves the cluster area). */
const SEEN_WRITE_MS = 30_000

export interface NodeHealthDeps {
  nodes: Pick<NodesRepository, 'list' | 'find' | 'setState' | 'recordSeen'>
  link: Pick<NodeLink, 'fetch'>
  placement: Pick<Placement, 'placements'>
  /** The edge learns at once that a down node's sites do not answer, and asks again when it is back. */
  runner: Pick<SiteRunner, 'markDown' | 'markStarted' | 'knownEndpoint' | 'isUp'>
  /**
   * Whether a site's endpoint still takes connections (drivers/runtime/first-answer.ts
   * acceptsConnection): a node's kernel forwards outlive its agent, so the sites of a node whose
   * agent does not answer are asked this each round, and those that take connections keep
   * serving. Without it, every site of a down node shows recovering.
   */
  accepts?: (endpoint: SiteEndpoint) => Promise<boolean>
  clock: Clock
  log: Logger
  downAfterMs?: number
  /**
   * The site firewall policy every node must keep (drivers/firewall/select.ts,
   * nodeFirewallPolicyOf): a node whose info shows another is sent this one (`PUT /v1/firewall`),
   * so a change of the control plane's config (or a Berth that closes more) reaches the nodes
   * joined before it. Read at each round: it follows the nodes (their addresses and agent ports).
   * Undefined: the nodes' policies are left alone.
   */
  firewall?: () => SiteFirewallPolicy | null
  /**
   * The agent of a node restarted (its info's `instance` changed) and lost its forwards: the
   * runtime asks for every one it knew there again, all together (ClusterRuntime.forgetForwards),
   * while the edge looks each site of the node up again.
   */
  forwardsLost?: (nodeId: string) => void | Promise<void>
  /**
   * Tells the owners (the event log's site.down and site.up, docs/api.md "Event types"): a site
   * that stops serving because its node stopped answering, and its return once it serves again
   * (its node back, or brought back elsewhere by an evacuation). Absent: none.
   */
  events?: { down(slug: string, reason: string): void; up(slug: string): void; active(slug: string): boolean }
}

/** After a node refused or failed a new firewall policy, how long before it is sent again. */
const FIREWALL_RETRY_MS = 30_000

/**
 * Watches the cluster's nodes from the control plane (docs/cluster.md, "Losing a node"): every
 * HEALTH_INTERVAL_MS the agent of each node that is not removed is asked `GET /v1/info`. A node
 * that fails for DOWN_AFTER_MS turns `down` (logged): its sites show `recovering` in the API
 * and the edge answers them with its "being brought back" page without trying. When it answers
 * again it is `active` again (a draining node stays draining; its reachability is kept here),
 * with its capacity and last_seen_at updated. A node that joined is `joining` until its agent
 * first answers (placement skips it meanwhile), then `active`; it is never `down` before.
 */
export class NodeHealth {
  /** Per unreachable node: since when it fails. */
  private failing = new Map<string, number>()
  /** Nodes found down in this process, and those of their sites marked down (recovering). */
  private unreachable = new Map<string, string[]>()
  private recoveringSlugs = new Set<string>()
  /** Sites of unreachable nodes that still take connections (through the node's kernel forwards): they keep serving. */
  private servedSlugs = new Set<string>()
  private generation = 0
  private running: Promise<void> | null = null
  private seenWritten = new Map<string, number>()
  /** Per node: its agent's instance when last answered. */
  private instances = new Map<string, string>()
  /** Per node: when a firewall policy was last sent (while under way, and after a failure). */
  private firewallSent = new Map<string, number>()
  /** Sites whose site.down this monitor told and whose site.up it has not yet (they left recovering but do not answer yet). */
  private toldDown = new Set<string>()

  constructor(private d: NodeHealthDeps) {}

  /** One round over every node; a round still running is not doubled. Never throws. */
  tick(): Promise<void> {
    this.running ??= this.round().catch((err) => this.d.log.error('the node health round failed', { error: (err as Error).message })).finally(() => (this.running = null))
    return this.running
  }

  /** The slugs of sites whose node is down: the API shows them `recovering`. */
  recovering(): ReadonlySet<string> {
    return this.recoveringSlugs
  }

  /** Moves whenever `recovering()` changed: for caches of site views. */
  version(): number {
    return this.generation
  }

  private async round(): Promise<void> {
    const nodes = this.d.nodes.list({ live: true })
    await Promise.all(nodes.map((node) => this.check(node)))
    for (const id of this.unreachable.keys()) if (!nodes.some((n) => n.id === id)) this.unreachable.delete(id)
    await this.refreshRecovering()
  }

  private async check(node: StoredNode): Promise<void> {
    const now = this.d.clock.now()
    const info = await this.ask(node)
    if (info) return this.answered(node, info, now)
    const since = this.failing.get(node.id) ?? now
    this.failing.set(node.id, since)
    if (this.unreachable.has(node.id)) return
    // A node that never answered stays joining (placement skips it): it was never up, so not down.
    if (node.state === 'joining') return
    // A node the store already has down (this process just started) is not given 6 s more.
    if (node.state !== 'down' && now - since < (this.d.downAfterMs ?? DOWN_AFTER_MS)) return
    this.unreachable.set(node.id, [])
    if (this.d.nodes.setState(node.id, ['active'], 'down')) {
      this.d.log.error('a node stopped answering: it is down, its sites show recovering (berth nodes evacuate brings them back elsewhere if it is lost)', { node: node.id, name: node.name, address: node.address, silent_ms: now - since })
    } else {
      this.d.log.warn('a node stopped answering', { node: node.id, state: node.state, silent_ms: now - since })
    }
  }

  private answered(node: StoredNode, info: AgentInfo, now: number): void {
    this.failing.delete(node.id)
    const wasDown = this.unreachable.get(node.id)
    const back = node.state === 'down' || wasDown !== undefined
    const changed = info.memoryBytes !== node.memoryBytes || info.cpus !== node.cpus || (info.swarmNodeId !== null && info.swarmNodeId !== node.swarmNodeId)
    if (back || changed || now - (this.seenWritten.get(node.id) ?? -Infinity) >= SEEN_WRITE_MS) {
      this.d.nodes.recordSeen(node.id, { at: now, memoryBytes: info.memoryBytes, cpus: info.cpus, swarmNodeId: info.swarmNodeId })
      this.seenWritten.set(node.id, now)
    }
    if (info.instance !== undefined) {
      const before = this.instances.get(node.id)
      this.instances.set(node.id, info.instance)
      if (before !== undefined && before !== info.instance) void this.agentRestarted(node)
    }
    if (this.d.firewall !== undefined && info.firewall !== undefined && !samePolicy(info.firewall, this.d.firewall())) void this.sendFirewall(node, now)
    if (node.state === 'joining' && this.d.nodes.setState(node.id, ['joining'], 'active')) {
      this.d.log.info('a joined node answered for the first time: it is active, sites may be placed there', { node: node.id, name: node.name, address: node.address })
    }
    if (back) {
      this.unreachable.delete(node.id)
      this.d.nodes.setState(node.id, ['down'], 'active')
      for (const slug of wasDown ?? []) this.d.runner.markStarted(slug)
      this.d.log.info('a node answers again', { node: node.id, name: node.name, state: node.state === 'down' ? 'active' : node.state })
    }
  }

  /** The node's agent restarted: its forwards are asked for again, each site looked up again by the edge. */
  private async agentRestarted(node: StoredNode): Promise<void> {
    const placed = await this.d.placement.placements().catch(() => new Map<string, string>())
    const slugs = [...placed].filter(([, on]) => on === node.id).map(([slug]) => slug)
    // Its forwards asked for again, all together, and in the same tick each site looked up again:
    // a request from now on asks for its forward and waits for it, never an old port that the new
    // forwards replaced (until here the former agent's rules still carry the old ports). Awaiting
    // the forwards before the look-ups left the edge on the old ports meanwhile: a 502.
    void Promise.resolve(this.d.forwardsLost?.(node.id)).catch(() => {})
    for (const slug of slugs) this.d.runner.markStarted(slug)
    this.d.log.info('the agent of a node restarted: its sites\' forwards are set again', { node: node.id, name: node.name, sites: slugs.length })
  }

  /**
   * Sends the node the control plane's firewall policy; once at a time per node, and again only
   * FIREWALL_RETRY_MS after a failure (the next rounds see the node's info change on success).
   */
  private async sendFirewall(node: StoredNode, now: number): Promise<void> {
    if (now - (this.firewallSent.get(node.id) ?? -Infinity) < FIREWALL_RETRY_MS) return
    this.firewallSent.set(node.id, now)
    const policy = this.d.firewall!()
    try {
      const { state } = await callAgent(this.d.link, node, 'setFirewall', { body: { policy } }, { signal: AbortSignal.timeout(ASK_TIMEOUT_MS * 10) })
      this.d.log.info('gave a node the control plane\'s site firewall policy', { node: node.id, name: node.name, pool: policy?.pool ?? null, found: state })
      this.firewallSent.delete(node.id)
    } catch (err) {
      this.d.log.warn('could not give a node the site firewall policy; trying again in 30 s', { node: node.id, name: node.name, error: (err as Error).message })
    }
  }

  /** The agent's info, or null when it did not answer well in time (refused, unreachable, an error status). */
  private async ask(node: StoredNode): Promise<AgentInfo | null> {
    try {
      return await callAgent(this.d.link, node, 'info', {}, { signal: AbortSignal.timeout(ASK_TIMEOUT_MS) })
    } catch {
      return null
    }
  }

  /** The sites of down nodes that still serve through the nodes' kernel forwards, though their agents do not answer. */
  servedWithoutAgent(): ReadonlySet<string> {
    return this.servedSlugs
  }

  /**
   * The sites of the unreachable nodes, from the Swarm's placements. Each that still takes
   * connections at its known endpoint (the node's kernel forward, which outlives its agent, to
   * its running container) keeps serving, asked again every round; the others are marked down
   * (the edge stops trying them, their view shows recovering) until their node answers again.
   */
  private async refreshRecovering(): Promise<void> {
    const next = new Set<string>()
    const served = new Set<string>()
    if (this.unreachable.size > 0) {
      const placed = await this.d.placement.placements()
      for (const [id, known] of this.unreachable) {
        const slugs = [...placed].filter(([, node]) => node === id).map(([slug]) => slug)
        const down: string[] = []
        await Promise.all(slugs.map(async (slug) => {
          if (!known.includes(slug) && await this.stillServes(slug)) {
            served.add(slug)
            if (!this.servedSlugs.has(slug)) this.d.log.warn('a site of a node whose agent does not answer still serves, through the node\'s kernel forward', { site: slug, node: id })
            return
          }
          next.add(slug)
          down.push(slug)
          if (!known.includes(slug)) this.d.runner.markDown(slug)
        }))
        this.unreachable.set(id, down)
      }
    }
    this.servedSlugs = served
    if (next.size !== this.recoveringSlugs.size || [...next].some((s) => !this.recoveringSlugs.has(s))) {
      this.recoveringSlugs = next
      this.generation++
    }
    // After the change: a site.down's view shows the site recovering.
    this.tell(next)
  }

  /**
   * site.down for each site that turned recovering, once per outage; site.up for each told down
   * that is no longer recovering once the runner has it running again (a node back marks its
   * sites started; an evacuation's move starts them elsewhere): asked again every round until then.
   */
  private tell(recovering: ReadonlySet<string>): void {
    if (!this.d.events) return
    for (const slug of recovering) {
      if (this.toldDown.has(slug)) continue
      this.toldDown.add(slug)
      this.d.events.down(slug, 'Its node stopped answering; it comes back when the node does, or elsewhere if the node is evacuated.')
    }
    for (const slug of this.toldDown) {
      // Suspended or deleted meanwhile: Berth's own stop now, not the outage's; its return is site.resumed.
      if (!this.d.events.active(slug)) {
        this.toldDown.delete(slug)
        continue
      }
      if (recovering.has(slug) || !this.d.runner.isUp(slug)) continue
      this.toldDown.delete(slug)
      this.d.events.up(slug)
    }
  }

  /** True when the site's known endpoint still takes connections (false when none is known, or no probe is given). */
  private async stillServes(slug: string): Promise<boolean> {
    const endpoint = this.d.runner.knownEndpoint(slug)
    return endpoint && this.d.accepts ? this.d.accepts(endpoint).catch(() => false) : false
  }
}

/** True when two site firewall policies make the same rules (an absent field and null are the same). */
export function samePolicy(a: SiteFirewallPolicy | null | undefined, b: SiteFirewallPolicy | null | undefined): boolean {
  const canonical = (p: SiteFirewallPolicy | null | undefined) => (p ? JSON.stringify([p.pool, p.publicEdge, p.guardedHost ?? null, p.closedPorts ?? null, p.blockedHosts ?? null, p.refusedTcpPorts?.length ? p.refusedTcpPorts : null]) : 'null')
  return canonical(a) === canonical(b)
}
