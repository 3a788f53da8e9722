import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BuildOptions } from '../../src/compose'
import type { NodeState } from '../../src/core/enums'
import { CONTROL_NODE, type Placement } from '../../src/drivers/cluster/types'
import { SiteNotRunnableError, type SiteDiskSpec, type SiteEndpoint, type SiteSpec } from '../../src/drivers/runtime/types'
import { buildNodeOps } from '../../src/compose/cluster-ops'
import { NodesRepository } from '../../src/domain/cluster/repository'
import { SitesRepository } from '../../src/domain/sites/repository'
import { buyInProcess, HomeRuntime } from './home-runtime'
import { inProcess, type InProcess } from './in-process'

/**
 * A TEST DOUBLE of the cluster runtime (ContainerRuntime & Placement), for the node operations'
 * tests until the Swarm runtime (drivers/runtime/swarm, the "swarm" part of issue 28) can run
 * here; the two-node lab tests the real one. Each site's home is a real folder per node
 * (`{root}/{node}/{slug}`), so archives and restores run on real files with GNU tar. It records
 * the order of what it is asked in `order`. `choose` follows the contract's rule: the active
 * node (the control plane counted as one) with the most free memory that fits, never one in
 * `except` nor draining, down or removed, reading the states from `stateOf` (the store).
 */
export class ClusterRuntimeDouble extends HomeRuntime implements Placement {
  /** slug → the node it is pinned to. */
  pins = new Map<string, string>()
  order: string[] = []

  constructor(private o: { stateOf: (node: string) => NodeState | undefined; nodes: () => string[]; memoryMb: Record<string, number>; siteMemoryMb: (slug: string) => number }) {
    super()
  }

  private nodeOfNow(slug: string): string {
    return this.pins.get(slug) ?? CONTROL_NODE
  }

  /** The site's home on its node; as the Swarm runtime's, none before ensureSite made its volume there. */
  async homePath(slug: string): Promise<string> {
    const home = this.homeOn(this.nodeOfNow(slug), slug)
    if (!existsSync(home)) throw new SiteNotRunnableError(`The site '${slug}' has no files volume yet.`)
    return home
  }

  /** The volume on the site's node: the image's page on the control plane (as HomeRuntime's), empty on a node where the site is new. */
  private makeVolume(slug: string): void {
    const node = this.nodeOfNow(slug)
    const home = this.homeOn(node, slug)
    if (existsSync(home)) return
    mkdirSync(home, { recursive: true })
    const owned = ['']
    if (node === CONTROL_NODE) {
      mkdirSync(join(home, 'public'))
      mkdirSync(join(home, 'logs'))
      writeFileSync(join(home, 'public', 'index.html'), '<h1>hello</h1>')
      writeFileSync(join(home, 'logs', 'access.log'), 'GET / 200\n')
      owned.push('public', 'public/index.html', 'logs', 'logs/access.log')
    }
    for (const p of owned) chownSync(join(home, p), 1000, 1000)
  }

  /** Writes a file into the site's home on the node it is on now. */
  async write(slug: string, path: string, content: string): Promise<void> {
    const file = join(await this.homePath(slug), path)
    mkdirSync(join(file, '..'), { recursive: true })
    writeFileSync(file, content)
  }

  homeOn(node: string, slug: string): string {
    return join(this.root, node, slug)
  }

  /** Nodes that reject every site task (as an engine that kept a former network does, moby#37087). */
  rejecting = new Set<string>()

  async ensureSite(spec: SiteSpec): Promise<SiteEndpoint> {
    if (!this.pins.has(spec.slug)) this.pins.set(spec.slug, CONTROL_NODE)
    this.order.push(`ensureSite ${spec.slug}@${this.nodeOfNow(spec.slug)}`)
    if (this.rejecting.has(this.nodeOfNow(spec.slug))) throw new Error(`Node ${this.nodeOfNow(spec.slug)} rejected the task of '${spec.slug}' 3 times.`)
    this.makeVolume(spec.slug)
    return super.ensureSite(spec)
  }

  /** As the Swarm runtime's: the volume on the node the site is placed on, nothing started. */
  async prepareSite(site: SiteDiskSpec): Promise<void> {
    this.order.push(`prepareSite ${site.slug}@${this.nodeOfNow(site.slug)}`)
    if (this.pins.has(site.slug)) this.makeVolume(site.slug)
  }

  /** Nodes that lack the site images: the next carryImage there carries them (answers true). */
  lackingImages = new Set<string>()
  /** Called at each carryImage (a test's hook: throw to refuse it). */
  onCarry?: (image: string, nodeId: string) => void

  /** As the Swarm runtime's: the image on the node, recorded; true when the node lacked it. */
  async carryImage(image: string, nodeId: string): Promise<boolean> {
    this.onCarry?.(image, nodeId)
    this.order.push(`carryImage ${image}@${nodeId}`)
    return this.lackingImages.delete(nodeId)
  }

  async withSitePaused<T>(slug: string, fn: () => Promise<T>): Promise<T> {
    this.order.push(`pause ${slug}@${this.nodeOfNow(slug)}`)
    return super.withSitePaused(slug, fn)
  }

  async nodeOf(slug: string): Promise<string | null> {
    return this.sites.get(slug)?.spec ? this.nodeOfNow(slug) : null
  }

  async placements(): Promise<Map<string, string>> {
    return new Map([...this.sites].filter(([, s]) => s.spec).map(([slug]) => [slug, this.nodeOfNow(slug)]))
  }

  /** Called at each placeOn, before it takes effect (a test's hook into the middle of a move). */
  onPlaceOn: ((slug: string) => Promise<void> | void) | null = null

  async placeOn(slug: string, nodeId: string): Promise<void> {
    await this.onPlaceOn?.(slug)
    this.order.push(`placeOn ${slug}@${nodeId}`)
    this.pins.set(slug, nodeId)
    const s = this.sites.get(slug)
    if (s) Object.assign(s, { spec: null, running: false })
  }

  async removeVolumeOn(slug: string, nodeId: string): Promise<void> {
    this.order.push(`removeVolumeOn ${slug}@${nodeId}`)
    rmSync(this.homeOn(nodeId, slug), { recursive: true, force: true })
  }

  async choose(memoryMb: number, except: string[] = []): Promise<string> {
    const used = new Map<string, number>()
    for (const [slug, node] of await this.placements()) used.set(node, (used.get(node) ?? 0) + this.o.siteMemoryMb(slug))
    const free = [CONTROL_NODE, ...this.o.nodes()]
      .filter((n) => !except.includes(n) && (n === CONTROL_NODE || this.o.stateOf(n) === 'active'))
      .map((n) => ({ n, free: (this.o.memoryMb[n] ?? 0) - (used.get(n) ?? 0) }))
      .filter((c) => c.free >= memoryMb)
      .sort((a, b) => b.free - a.free)
    if (!free[0]) throw new Error(`no active node has ${memoryMb} MB free`)
    return free[0].n
  }

  /** Swarm nodes removed from the manager's list (NodesService.remove). */
  swarmNodesRemoved: string[] = []

  async removeSwarmNode(swarmNodeId: string): Promise<void> {
    this.swarmNodesRemoved.push(swarmNodeId)
  }
}

const GIB = 1024 ** 3

/**
 * The API and services in-process over a ClusterRuntimeDouble, with two joined nodes in the
 * store (node_a: 8 GiB, node_b: 2 GiB; the control plane 4 GiB), the node operations built as
 * `berth serve` builds them, and helpers to buy sites and pin them.
 */
export function clusterInProcess(opts: { recovering?: BuildOptions['recovering']; env?: Record<string, string> } = {}) {
  let repo: NodesRepository | null = null
  let h: InProcess | null = null
  const runtime = new ClusterRuntimeDouble({
    stateOf: (id) => repo!.find(id)?.state,
    nodes: () => repo!.list({ live: true }).map((n) => n.id),
    memoryMb: { [CONTROL_NODE]: 4096, node_a: 8192, node_b: 2048 },
    siteMemoryMb: (slug) => h!.services.plans.get(new SitesRepository(h!.services.store).findLiveBySlug(slug)!.planSlug).features.memory_mb,
  })
  h = inProcess({ runtime, placement: runtime, recovering: opts.recovering, env: opts.env })
  repo = new NodesRepository(h.services.store)
  for (const [id, gib] of [['node_a', 8], ['node_b', 2]] as const) {
    repo.insert({
      id, name: `box-${id.slice(-1)}`, address: id === 'node_a' ? '10.0.0.2' : '10.0.0.3', agentPort: 7710, swarmNodeId: `swarm-${id}`,
      certFingerprint: `fp-${id}`, certSerial: `serial-${id}`, state: 'active', memoryBytes: gib * GIB, cpus: 2, joinedAt: h.clock.now(),
    })
  }
  // Whether each node's agent answers (NodesService.evacuate asks): a down node does not, unless set here.
  const answering = new Map<string, boolean>()
  // Whether the Swarm's manager still hears each node's engine: a down node's is lost, unless set here.
  const engineHeard = new Map<string, boolean>()
  // berth serve's edge, asked in-process: its site directory's answer (no listener here).
  const edge = {
    async until(slug: string, want: 'paged' | 'served') {
      const target = await h!.services.directory.resolve(slug)
      return (target?.state === 'serving') === (want === 'served')
    },
  }
  const ops = buildNodeOps(h.nodeOpsDeps, runtime, async (node) => answering.get(node.id) ?? repo!.find(node.id)?.state !== 'down', { edge, engineUp: async (node) => engineHeard.get(node.id) ?? false })
  return {
    h, runtime, repo, ops, answering, engineHeard,
    /** Buys a vps site (1 GiB, snapshots), provisioned on the control plane. */
    buy: (stem = 'cl') => buyInProcess(h!, 'svc_business_monthly', stem),
    /** Runs the site on `node` (its home there starts empty), as a placement and a run would. */
    async pin(slug: string, node: string) {
      await runtime.placeOn(slug, node)
      await h!.services.runner.run(new SitesRepository(h!.services.store).findLiveBySlug(slug)!)
    },
    async close() {
      await h!.close()
      runtime.close()
      rmSync(runtime.root, { recursive: true, force: true })
    },
  }
}
