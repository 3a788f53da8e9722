import type Docker from 'dockerode'
import type { ClusterRuntimeOptions } from './options'
import { CONTROL_NODE, type Placement } from '../../cluster/types'
import { ignoring, openEngine, orNull } from '../engine'
import { unavailableEngine } from './engine-errors'
import { LABEL, siteFilter, siteLabels, specHash } from '../site-container'
import { ensureSiteVolume } from '../container-ops'
import { SiteRuntime, type Engine, type SiteHost } from '../site-runtime'
import { HomePaths } from '../home-paths'
import { firstHeld, HELPER_IMAGES, SiteDisks } from '../site-disks'
import type { SiteDisk, SiteDiskSpec, SiteEndpoint, SiteEvent, SiteSpec, SiteWatch, SiteWatchHandlers } from '../types'
import { forgettingHomes, watchCluster } from './cluster-watch'
import { Forwards } from './forwards'
import { NodeEngines } from './node-engines'
import { NodeImages } from './node-images'
import { chooseOnSwarm } from './placement'
import { limitsDiffer, NODE_LABEL, serviceDrift, serviceSpec, type ServiceInfo } from './service-spec'
import { nodeOfService, removeNetworkWhenFree, replicasOf, SiteServices } from './site-services'
import { removeDatabases, removeEndedTasks, siteContainer, stopLeft, stopOnNode, untilNoContainer, untilRunning } from './site-tasks'
import { withoutSwap } from './hardening'
import { ensureManager } from '../swarm-membership'
import { databaseHost, type DatabaseHost } from './database-host'

/**
 * The container runtime of a cluster (issue 28, docs/cluster.md "How sites run on Swarm"):
 * SiteRuntime (../site-runtime.ts, the same code as a single box's) over SwarmHost, with the
 * sites' placement as a typed dependency for the node operations (`placement`).
 */
export class ClusterRuntime extends SiteRuntime {
  /** Which node each site runs on, read and changed by the node operations (domain/cluster); a move's change runs under the site's lock. */
  readonly placement: Placement
  /** Where the sites' databases run: on their site's node, on its network (database-host.ts). */
  readonly databases: DatabaseHost
  private swarm: SwarmHost

  constructor(opts: ClusterRuntimeOptions) {
    const homes = new HomePaths()
    const swarm = new SwarmHost(opts, homes)
    super(swarm, opts, homes)
    this.swarm = swarm
    this.databases = databaseHost({ instanceId: opts.instanceId, ...swarm.databaseParts(), underLock: (slug, fn) => this.underLock(slug, fn) })
    this.placement = {
      nodeOf: (slug) => this.call(() => swarm.nodeOf(slug)),
      placements: () => this.call(() => swarm.placements()),
      placeOn: (slug, nodeId) => this.underLock(slug, () => swarm.placeOn(slug, nodeId)),
      prepareSite: (site) => this.prepareSite(site),
      carryImage: (image, nodeId) => this.call(() => swarm.carryImage(image, nodeId)),
      removeVolumeOn: (slug, nodeId) => this.call(() => swarm.removeVolumeOn(slug, nodeId)),
      choose: (memoryMb, except) => this.call(() => swarm.choose(memoryMb, except)),
      removeSwarmNode: (swarmNodeId) => this.call(() => swarm.removeSwarmNode(swarmNodeId)),
    }
  }

  /** The agent of `nodeId` restarted and lost its forwards: the next endpoint of each of its sites asks for a new one. */
  forgetForwards(nodeId: string): Promise<void> {
    return this.swarm.forgetForwards(nodeId)
  }
}

/**
 * The cluster as the host of the sites (SiteHost): each site is a Swarm service of one replica
 * pinned to one node (service-spec.ts), created through the manager (this box's engine); what
 * Swarm cannot do through the manager (a worker's containers: exec, inspect, stats, pause,
 * events, volumes, image loads; moby#27552) is done on the node's own engine, reached through its
 * agent (node-engines.ts): the engine lookup answers the node the site's service is pinned to.
 * Placement is Berth's: the node a site runs on is a label and a `node.id` constraint on its service.
 *
 * A site's endpoint is its container's address on the control node, and the agent's forward
 * (`{ node address, port }`) on any other node (forwards.ts): the edge is unchanged.
 */
class SwarmHost implements SiteHost {
  private engines!: NodeEngines
  private services!: SiteServices
  private loading: Promise<void> | undefined
  private images: NodeImages
  private forwards: Forwards
  private disks: SiteDisks
  /** Containers whose disk was seen mounted (by id): a task started since is checked again. */
  private mountedFor = new Set<string>()
  /** Sites placed (placeOn) before they had a service: their first start runs them there. */
  private pinned = new Map<string, string>()
  private networkListeners: (() => void)[] = []

  constructor(private opts: ClusterRuntimeOptions, private homes: HomePaths) {
    this.images = new NodeImages(opts.log)
    this.forwards = new Forwards(opts.link, opts.nodes, opts.log)
    const candidates = opts.helperImages ?? HELPER_IMAGES
    this.disks = new SiteDisks({
      instanceId: opts.instanceId,
      log: opts.log,
      imageOn: async (engine) => {
        const held = await firstHeld(engine.docker, candidates).catch(() => null)
        if (held) return held
        const manager = this.engines.manager
        const image = await firstHeld(manager.docker, candidates)
        await this.images.ensureOn(manager.bulk, engine.bulk, engine.nodeId, image)
        return image
      },
    })
  }

  /** The parts the databases' host is made of (database-host.ts). */
  databaseParts() {
    return { ready: () => this.ready(), engines: () => this.engines, services: () => this.services, images: this.images, disks: this.disks, volumeOn: (slug: string) => this.volumeOn(slug),
      endpointOf: (engine: Engine, slug: string, info: Docker.ContainerInspectInfo) => this.endpointOf(engine, slug, info), startWithinMs: this.opts.startWithinMs ?? 60_000, log: this.opts.log }
  }

  /** Connects, and makes this engine a Swarm manager (swarm-membership.ts ensureManager: `swarm init` advertising cluster.address) when it is in no swarm. */
  ready(): Promise<void> {
    this.loading ??= (async () => {
      await ensureManager(this.opts.managerSocket, this.opts.advertiseAddress)
      const info = await (await openEngine(this.opts.managerSocket)).info()
      if (!info.Swarm?.ControlAvailable) throw new Error(`The engine at ${this.opts.managerSocket} is in a swarm but not its manager (state ${info.Swarm?.LocalNodeState}); the control plane's engine must manage the swarm.`)
      this.engines = await NodeEngines.forManager(this.opts.managerSocket, info.Swarm.NodeID, this.opts)
      this.services = new SiteServices(this.engines.manager.docker, this.opts.instanceId)
    })().catch((err) => {
      this.loading = undefined
      throw err
    })
    return this.loading
  }

  /** Runs an engine call; an engine that does not answer is named (a node's agent, or this box's engine). */
  async call<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      throw unavailableEngine(this.opts.managerSocket, this.opts.nodes(), err) ?? err
    }
  }

  watch(handlers: SiteWatchHandlers): SiteWatch {
    const { managerSocket: manager, instanceId, log, nodes } = this.opts
    return watchCluster({ manager, instanceId, log, nodes, engineOf: (node) => this.opts.link.engineOptions(node), beforeStart: (nodeId, e) => this.forwardStarted(nodeId, e) }, forgettingHomes(handlers, this.homes))
  }

  /** Whether the manager's engine answers within 2 s. */
  ping(): Promise<boolean> {
    const ping = (docker: Docker) => (docker.ping as unknown as (opts: { abortSignal: AbortSignal }) => Promise<unknown>).call(docker, { abortSignal: AbortSignal.timeout(2_000) })
    return this.ready().then(() => ping(this.engines.manager.docker)).then(() => true, () => false)
  }

  /** Runs `listener` after each task started on this box: the engine made the site's network here, its rules above the site firewall's FORWARD backstop. */
  onNetworkCreated(listener: () => void): void {
    this.networkListeners.push(listener)
  }

  /** The engine of the node the site's service is pinned to, and its task's container there; the manager's and none without a service. */
  async siteOn(slug: string): Promise<{ engine: Engine; info: Docker.ContainerInspectInfo | null }> {
    const service = await this.services.find(slug)
    if (!service) return { engine: this.engines.manager, info: null }
    const engine = await this.engines.of(nodeOfService(service))
    return { engine, info: await siteContainer(engine, this.opts.instanceId, slug) }
  }

  /** The node of the site's service, else the node it was placed on, else the control node. */
  async volumeOn(slug: string): Promise<Engine> {
    const service = await this.services.find(slug)
    return this.engines.of(service ? nodeOfService(service) : this.pinned.get(slug) ?? CONTROL_NODE)
  }

  allEngines(): Promise<Engine[]> {
    return this.engines.all()
  }

  endpointOf(engine: Engine, slug: string, info: Docker.ContainerInspectInfo): Promise<SiteEndpoint> {
    return this.forwards.endpointOf(engine, this.services.names(slug).network, slug, info)
  }

  /** The site's volume on the node it is placed on, before any container (a move restores into it); no-op when unplaced. */
  async prepare(site: SiteDiskSpec): Promise<void> {
    const service = await this.services.find(site.slug)
    const nodeId = service ? nodeOfService(service) : this.pinned.get(site.slug)
    if (nodeId) await this.ensureVolume(await this.engines.of(nodeId), site)
  }

  async diskOf(engine: Engine, slug: string): Promise<SiteDisk | null> {
    const volume = this.services.names(slug).volume
    if (!(await orNull(engine.docker.getVolume(volume).inspect()))) return null
    return this.disks.usage(engine, volume, 0)
  }

  /** A smaller disk (or a bigger one this host cannot grow online) is made with the service scaled to none; the caller's next ensureSite runs it. */
  async resizeDisk(site: SiteDiskSpec): Promise<void> {
    const engine = await this.volumeOn(site.slug)
    await this.disks.bringTo(engine, this.services.names(site.slug).volume, site.diskGb, () => this.stop(site.slug, {}))
  }

  /** The site's volume on `engine` and its disk of `diskGb`, mounted. */
  private async ensureVolume(engine: Engine, site: SiteDiskSpec): Promise<void> {
    const volume = this.services.names(site.slug).volume
    await ensureSiteVolume(engine.docker, volume, siteLabels(this.opts.instanceId, site))
    await this.disks.ensure(engine, volume, site.diskGb)
  }

  /**
   * Whether the running task's container `info` has its disk: checked once per container (an
   * exec on a node). A container started before its disk was mounted (the node restarted, and
   * its engine ran the task on the empty, immutable folder beneath) is stopped once the disk is
   * mounted: Swarm replaces it, on the disk. False then.
   */
  private async hasDisk(engine: Engine, spec: SiteSpec, info: Docker.ContainerInspectInfo): Promise<boolean> {
    if (this.mountedFor.has(info.Id)) return true
    const state = await this.disks.ensure(engine, this.services.names(spec.slug).volume, spec.diskGb)
    if (state !== 'present') {
      await stopOnNode(engine, this.opts.instanceId, spec.slug)
      return false
    }
    this.mountedFor.add(info.Id)
    return true
  }

  /** Scales the site's service to no replica, and waits for its container to stop; `forRestart`: its container stopped on its node, Swarm replaces it (site-tasks.ts stopOnNode). */
  async stop(slug: string, opts: { forRestart?: boolean }): Promise<void> {
    const service = await this.services.find(slug)
    if (!service) return
    const engine = await this.engines.of(nodeOfService(service))
    if (opts.forRestart && replicasOf(service) === 1) return stopOnNode(engine, this.opts.instanceId, slug)
    if (replicasOf(service) !== 0) await this.services.scaleTo(service, 0)
    await untilNoContainer(engine, this.opts.instanceId, slug, true)
  }

  /** Removes the service, its swarm network (manager), its configuration networks (node and control node), and its volume on its node when asked. */
  async remove(slug: string, opts: { volume: boolean }): Promise<void> {
    const service = await this.services.find(slug)
    const nodeId = service ? nodeOfService(service) : this.pinned.get(slug) ?? CONTROL_NODE
    if (service) await this.services.remove(service)
    this.pinned.delete(slug)
    const engine = await this.engines.of(nodeId)
    await untilNoContainer(engine, this.opts.instanceId, slug, false)
    await Promise.all([this.forwards.drop(slug, nodeId), removeDatabases(engine, this.opts.instanceId, slug)])
    await this.services.removeNetwork(this.services.names(slug).network)
    const filters = siteFilter(this.opts.instanceId, slug)
    for (const e of new Set([engine, this.engines.manager])) {
      const networks = await e.docker.listNetworks({ filters })
      await Promise.all(networks.map((n) => removeNetworkWhenFree(e.docker, n.Id)))
    }
    if (opts.volume) {
      const { Volumes: volumes } = await engine.docker.listVolumes({ filters })
      await Promise.all((volumes ?? []).map((v) => this.disks.removeVolume(engine, v.Name)))
    }
    this.opts.log.info('removed site from the swarm', { site: slug, node: nodeId, files: opts.volume ? 'removed' : 'kept' })
  }

  /** A service's task would be replaced by Swarm: its service is scaled to 0 instead of the container stopped. */
  async release(_engine: Engine, info: Docker.ContainerInspectInfo): Promise<boolean> {
    const serviceName = info.Config.Labels?.['com.docker.swarm.service.name']
    const service = serviceName ? await this.services.named(serviceName) : null
    if (!service) return false
    await this.services.scaleTo(service, 0)
    return true
  }

  /** Placement (contracts in drivers/cluster/types.ts), through ClusterRuntime.placement. */
  async nodeOf(slug: string): Promise<string | null> {
    const service = await this.services.find(slug)
    return service ? nodeOfService(service) : null
  }

  /** Placement.carryImage: the manager's `image` on the node's engine (the control node has it). */
  async carryImage(image: string, nodeId: string): Promise<boolean> {
    const engine = await this.engines.of(nodeId)
    if (!engine.node) return false
    const before = await orNull(engine.docker.getImage(image).inspect())
    return (await this.images.ensureOn(this.engines.manager.bulk, engine.bulk, engine.nodeId, image)).Id !== before?.Id
  }

  async placements(): Promise<Map<string, string>> {
    return new Map((await this.services.list()).map((s) => [s.Spec.Labels?.[LABEL.slug] ?? '', nodeOfService(s)]))
  }

  /**
   * Pins the site to `nodeId`: its service keeps its definition with the new node's label and
   * constraint and no replica (the old node's task ends; its volume stays), so the next
   * start brings the image, network and volume to the new node and starts it there. A site
   * without a service is remembered (in memory) for its first start.
   */
  async placeOn(slug: string, nodeId: string): Promise<void> {
    const swarmId = await this.engines.swarmIdOf(await this.engines.of(nodeId))
    const service = await this.services.find(slug)
    this.homes.forget(slug)
    if (!service) {
      this.pinned.set(slug, nodeId)
      return this.homes.forget(slug)
    }
    const from = nodeOfService(service)
    if (from === nodeId) return
    await this.services.update(service, (spec) => ({
      ...spec,
      Labels: { ...spec.Labels, [NODE_LABEL]: nodeId },
      TaskTemplate: { ...spec.TaskTemplate, Placement: { ...spec.TaskTemplate.Placement, Constraints: [`node.id==${swarmId}`] } },
      Mode: { Replicated: { Replicas: 0 } },
    }))
    // Forgotten again once the service names the new node: a home looked up in between found the
    // old node's volume (HomePaths), and the move's restore, which asks next, must not write there.
    this.homes.forget(slug)
    const old = await this.engines.of(from).catch(() => null)
    await (old && stopLeft(old, this.services, this.opts.instanceId, slug).catch((err) => this.opts.log.warn('the old node did not stop the site in time', { site: slug, node: from, error: (err as Error).message })))
    await this.forwards.drop(slug, from)
    this.opts.log.info('placed a site on another node', { site: slug, from, to: nodeId })
  }

  async removeVolumeOn(slug: string, nodeId: string): Promise<void> {
    const engine = await this.engines.of(nodeId)
    const name = this.services.names(slug).volume
    const volume = await orNull(engine.docker.getVolume(name).inspect())
    if (!volume || volume.Labels?.[LABEL.instance] !== this.opts.instanceId) return
    await removeEndedTasks(engine, this.opts.instanceId, slug)
    await this.disks.removeVolume(engine, name)
    if (this.homes.get(slug)?.includes(name)) this.homes.forget(slug)
  }

  async removeSwarmNode(swarmNodeId: string): Promise<void> {
    if (swarmNodeId === (await this.engines.swarmIdOf(this.engines.manager))) return
    await ignoring([404], this.engines.manager.docker.getNode(swarmNodeId).remove({ force: true }))
  }

  forgetForwards = (nodeId: string): Promise<void> => this.forwards.forgetNode(nodeId)

  async choose(memoryMb: number, except: string[] = []): Promise<string> {
    return chooseOnSwarm(this.engines.manager.docker, await this.services.list(), this.opts.nodes(), memoryMb, except)
  }

  /** Creates or updates the site's service on its node (chosen for a new site) and waits for its task's container to run. */
  async start(spec: SiteSpec): Promise<SiteEndpoint> {
    let service = await this.services.find(spec.slug)
    if (service && service.Spec.Labels?.[LABEL.siteId] !== spec.siteId) {
      // A service of this name for another site id: never hand it this one's traffic.
      this.opts.log.warn('removing a service of another site id', { site: spec.slug })
      await this.services.remove(service)
      await untilNoContainer(await this.engines.of(nodeOfService(service)), this.opts.instanceId, spec.slug, false)
      service = null
    }
    const nodeId = service ? nodeOfService(service) : this.pinned.get(spec.slug) ?? await this.choose(spec.memoryMb)
    const engine = await this.engines.of(nodeId)
    if (service && replicasOf(service) === 1 && !serviceDrift(service, spec, specHash(spec)) && !limitsDiffer(service, spec)) {
      // The usual case: it runs as asked, on the manager's current image.
      const [info, image] = await Promise.all([siteContainer(engine, this.opts.instanceId, spec.slug), orNull(this.engines.manager.docker.getImage(spec.image).inspect())])
      if (info?.State.Running && (!image || info.Image === image.Id) && (await this.hasDisk(engine, spec, info))) {
        if (info.State.Paused) await engine.docker.getContainer(info.Id).unpause()
        return this.endpointOf(engine, spec.slug, await withoutSwap(engine.docker, info, this.opts.log))
      }
    }
    const started = performance.now()
    const { readonlyRootfs, imageId } = await this.prepareNode(engine, spec)
    const plan = { instanceId: this.opts.instanceId, spec, names: this.services.names(spec.slug), nodeId, swarmNodeId: await this.engines.swarmIdOf(engine), readonlyRootfs, apiVersion: this.engines.managerApi }
    let before: string | null = null
    if (!service) {
      await this.engines.manager.docker.createService(serviceSpec(plan))
      this.pinned.delete(spec.slug)
      this.opts.log.info('created site service', { site: spec.slug, node: nodeId })
    } else {
      const current = await siteContainer(engine, this.opts.instanceId, spec.slug)
      // A rebuilt image under the same tag: Swarm sees no change in the spec, so force one.
      const rebuilt = current !== null && current.Image !== imageId
      const reason = serviceDrift(service, spec, specHash(spec)) ?? (limitsDiffer(service, spec) ? 'its limits changed' : replicasOf(service) !== 1 ? 'it was stopped' : rebuilt ? 'its image was rebuilt' : null)
      // None: Swarm is replacing a task that ended (the healer's call after a die); wait for it.
      if (reason) {
        before = current?.Id ?? null
        const wanted = serviceSpec(plan) as unknown as ServiceInfo['Spec']
        await this.services.update(service, (now) => ({ ...wanted, TaskTemplate: { ...wanted.TaskTemplate, ForceUpdate: (now.TaskTemplate.ForceUpdate ?? 0) + (rebuilt ? 1 : 0) } }))
        this.opts.log.info('updated site service', { site: spec.slug, node: nodeId, reason })
      }
    }
    const running = await untilRunning(engine, this.opts.instanceId, spec.slug, {
      before,
      sshPort: spec.sshPort,
      withinMs: this.opts.startWithinMs ?? 60_000,
      problem: (since) => this.services.taskProblem(spec.slug, since),
    })
    const info = await withoutSwap(engine.docker, running, this.opts.log)
    this.opts.log.debug('site task runs', { site: spec.slug, node: nodeId, ms: Math.round(performance.now() - started) })
    if (!engine.node) this.networkListeners.forEach((listener) => listener())
    return this.endpointOf(engine, spec.slug, info)
  }

  /** What a site needs on its node before its task can run there: the image, its /28, the swarm network, the volume. */
  private async prepareNode(engine: Engine, spec: SiteSpec): Promise<{ readonlyRootfs: boolean; imageId: string }> {
    const names = this.services.names(spec.slug)
    const labels = siteLabels(this.opts.instanceId, spec)
    const manager = this.engines.manager
    const image = await this.images.ensureOn(manager.bulk, engine.node ? engine.bulk : manager.bulk, engine.nodeId, spec.image)
    await this.engines.networksOf(engine).ensure(names.config, labels, {
      configOnly: true,
      ...(engine.node ? { alsoUsed: () => this.engines.networksOf(manager).used() } : {}),
    })
    await Promise.all([this.services.ensureNetwork(names), this.ensureVolume(engine, spec)])
    return { readonlyRootfs: image.Config?.Labels?.[LABEL.rootfs] !== 'writable', imageId: image.Id }
  }

  /** A task's container started (Swarm replaced a task): no swap, and on a node its forward follows it, before the start is reported. */
  private async forwardStarted(nodeId: string, e: SiteEvent): Promise<void> {
    await this.ready()
    const engine = await this.engines.of(nodeId)
    const info = await orNull(engine.docker.getContainer(e.containerId).inspect())
    if (!info?.State.Running) return
    await withoutSwap(engine.docker, info, this.opts.log)
    if (nodeId !== CONTROL_NODE) await this.endpointOf(engine, e.slug, info)
  }
}
