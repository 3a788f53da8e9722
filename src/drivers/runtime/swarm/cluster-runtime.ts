import type Docker from 'dockerode'
import type { Logger } from '../../../lib/logger'
import { KeyedLock } from '../../../lib/keyed-lock'
import { CONTROL_NODE, nodeHomePath, type ClusterNode, type NodeLink, type Placement } from '../../cluster/types'
import { engineCall, ignoring, openEngine, orNull, statusOf, type EngineAddress } from '../engine'
import { LABEL, siteFilter, siteLabels, SITE_PORT, specHash } from '../site-container'
import { SiteNetworks } from '../site-network'
import { execBounded, startInContainer, type StartInSite } from '../processes'
import { runCommand } from '../command'
import { openTerminal } from '../terminal'
import { containerStats, ensureSiteVolume, frozenWhile } from '../container-ops'
import {
  HostPortTakenError, RuntimeUnavailableError, SiteNotRunnableError, type CommandResult, type CommandSpec, type ContainerRuntime, type ExecResult, type ManagedContainer, type SiteEndpoint, type SiteEvent, type SiteRuntimeState, type SiteSpec, type SiteStats, type SiteWatch, type SiteWatchHandlers, type Terminal, type TerminalSpec,
} from '../types'
import { watchCluster } from './cluster-watch'
import { NodeImages } from './node-images'
import { chooseNode, type NodeCapacity } from './placement'
import { limitsDiffer, NODE_LABEL, serviceDrift, serviceNames, serviceSpec, type ServiceInfo, type ServiceNames } from './service-spec'

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
  log: Logger
  /** How long a site's task may take to run (image on the node, network, start). */
  startWithinMs?: number
}

const PING_TIMEOUT_MS = 2000
const START_WITHIN_MS = 60_000
/** Between two looks for a task's container; Swarm starts one in about a second. */
const POLL_MS = 100
/** How long a stop or removal waits for the node to drop the task's container. */
const GONE_WITHIN_MS = 30_000

/** A node's engine, as the runtime holds it. */
interface Engine {
  nodeId: string
  /** null for the control node. */
  node: ClusterNode | null
  docker: Docker
  /** Without a request timeout: image transfers. */
  bulk: Docker
  address: EngineAddress
  key: string
}

/** Where the agent of a node forwards a site's traffic to, as last set. */
interface Forward {
  nodeId: string
  target: string
  port: number
}

/**
 * The container runtime of a cluster (issue 28, docs/cluster.md "How sites run on Swarm"): each
 * site is a Swarm service of one replica pinned to one node (service-spec.ts), created through
 * the manager (this box's engine); what Swarm cannot do through the manager (a worker's
 * containers: exec, inspect, stats, pause, events, volumes, image loads; moby#27552) is done on
 * the node's own engine, reached through its agent (NodeLink). Placement is Berth's: the node a
 * site runs on is a label and a `node.id` constraint on its service (Placement).
 *
 * A site's endpoint is its container's address on the control node, and the agent's forward
 * (`{ node address, port }`) on any other node: the edge is unchanged.
 */
export class ClusterRuntime implements ContainerRuntime, Placement {
  private manager!: Docker
  private managerBulk!: Docker
  private controlSwarmId = ''
  private loading: Promise<void> | undefined
  private locks = new KeyedLock()
  private engines = new Map<string, Engine>()
  private networks = new Map<string, SiteNetworks>()
  private images: NodeImages
  private forwards = new Map<string, Forward>()
  private homes = new Map<string, string>()
  /** Sites placed (placeOn) before they had a service: their first ensureSite runs them there. */
  private pinned = new Map<string, string>()

  constructor(private opts: ClusterRuntimeOptions) {
    this.images = new NodeImages(opts.log)
  }

  /** Connects, and makes this engine a Swarm manager (`swarm init` advertising cluster.address) when it is in no swarm. */
  ready(): Promise<void> {
    this.loading ??= (async () => {
      this.manager = await openEngine(this.opts.managerSocket)
      this.managerBulk = await openEngine(this.opts.managerSocket, 0)
      let info = await this.manager.info()
      if (info.Swarm?.LocalNodeState === 'inactive') {
        await this.manager.swarmInit({ ListenAddr: '0.0.0.0:2377', AdvertiseAddr: this.opts.advertiseAddress })
        this.opts.log.info('made this engine a Swarm manager', { advertise: this.opts.advertiseAddress })
        info = await this.manager.info()
      }
      if (!info.Swarm?.ControlAvailable) throw new Error(`The engine at ${this.opts.managerSocket} is in a swarm but not its manager (state ${info.Swarm?.LocalNodeState}); the control plane's engine must manage the swarm.`)
      this.controlSwarmId = info.Swarm.NodeID
    })().catch((err) => {
      this.loading = undefined
      throw err
    })
    return this.loading
  }

  watch(handlers: SiteWatchHandlers): SiteWatch {
    return watchCluster({
      manager: this.opts.managerSocket,
      instanceId: this.opts.instanceId,
      log: this.opts.log,
      nodes: this.opts.nodes,
      engineOf: (node) => this.opts.link.engineOptions(node),
      beforeStart: (nodeId, e) => this.forwardStarted(nodeId, e),
    }, handlers)
  }

  async ping(): Promise<boolean> {
    try {
      await this.ready()
      const ping = this.manager.ping as unknown as (opts: { abortSignal: AbortSignal }) => Promise<unknown>
      await ping.call(this.manager, { abortSignal: AbortSignal.timeout(PING_TIMEOUT_MS) })
      return true
    } catch {
      return false
    }
  }

  ensureSite(spec: SiteSpec): Promise<SiteEndpoint> {
    const full = { ...spec, pidsLimit: spec.pidsLimit > 0 ? spec.pidsLimit : this.opts.pidsLimit }
    return this.call(() => this.locks.run(spec.slug, () => this.ensureLocked(full)))
  }

  /** Nothing ahead of the service: its node, and with it where its network and volume go, is chosen at ensureSite. */
  async prepareSite(): Promise<void> {
    await this.call(async () => {})
  }

  inspectSite(slug: string): Promise<SiteRuntimeState | null> {
    return this.call(async () => {
      const service = await this.findService(slug)
      if (!service) return null
      const engine = await this.engineOf(nodeOfService(service))
      const info = await this.siteContainer(engine, slug)
      if (!info) return null
      const running = info.State.Running
      return { containerId: info.Id, running, endpoint: running ? await this.endpointOf(engine, slug, info) : null, image: info.Config.Image.split('@')[0] ?? info.Config.Image }
    })
  }

  stopSite(slug: string): Promise<void> {
    return this.call(() => this.locks.run(slug, async () => {
      const service = await this.findService(slug)
      if (!service) return
      if (replicasOf(service) !== 0) await this.updateService(service, (spec) => ({ ...spec, Mode: { Replicated: { Replicas: 0 } } }))
      await this.untilNoContainer(await this.engineOf(nodeOfService(service)), slug, true)
    }))
  }

  removeSite(slug: string, opts: { volume: boolean }): Promise<void> {
    return this.call(() => this.locks.run(slug, async () => {
      const names = this.names(slug)
      const service = await this.findService(slug)
      const nodeId = service ? nodeOfService(service) : this.pinned.get(slug) ?? CONTROL_NODE
      if (service) await ignoring([404], this.manager.getService(service.ID).remove())
      this.pinned.delete(slug)
      const engine = await this.engineOf(nodeId)
      await this.untilNoContainer(engine, slug, false)
      await this.dropForward(slug)
      await this.removeSwarmNetwork(names.network)
      const filters = siteFilter(this.opts.instanceId, slug)
      for (const e of new Set([engine, await this.engineOf(CONTROL_NODE)])) {
        const networks = await e.docker.listNetworks({ filters })
        await Promise.all(networks.map((n) => ignoring([404], e.docker.getNetwork(n.Id).remove())))
      }
      if (opts.volume) {
        this.homes.delete(slug)
        const { Volumes: volumes } = await engine.docker.listVolumes({ filters })
        await Promise.all((volumes ?? []).map((v) => ignoring([404], engine.docker.getVolume(v.Name).remove())))
      }
      this.opts.log.info('removed site from the swarm', { site: slug, node: nodeId, files: opts.volume ? 'removed' : 'kept' })
    }))
  }

  listManaged(): Promise<ManagedContainer[]> {
    return this.call(async () => {
      const filters = { label: [`${LABEL.managed}=true`, `${LABEL.instance}=${this.opts.instanceId}`] }
      const lists = await Promise.all((await this.allEngines()).map(async (engine) => {
        try {
          return await engine.docker.listContainers({ all: true, filters })
        } catch (err) {
          if (engine.node === null) throw err
          this.opts.log.warn('could not list the containers of a node', { node: engine.nodeId, error: (err as Error).message })
          return []
        }
      }))
      return lists.flat().map((c) => ({
        containerId: c.Id,
        name: (c.Names[0] ?? '').replace(/^\//, ''),
        siteId: c.Labels[LABEL.siteId] ?? '',
        slug: c.Labels[LABEL.slug] ?? '',
        running: c.State === 'running',
      }))
    })
  }

  /**
   * Stops a container the store does not know, on whichever node has it. A service's task would
   * be replaced by Swarm, so its service is scaled to 0 instead. Refuses another instance's.
   */
  quarantine(containerId: string): Promise<void> {
    return this.call(async () => {
      for (const engine of await this.allEngines()) {
        const info = await orNull(engine.docker.getContainer(containerId).inspect()).catch(() => null)
        if (!info) continue
        const labels = info.Config.Labels ?? {}
        if (labels[LABEL.instance] !== this.opts.instanceId) throw new Error(`Container ${containerId} is not managed by this Berth instance; leaving it alone.`)
        const serviceName = labels['com.docker.swarm.service.name']
        const service = serviceName ? await orNull(this.manager.getService(serviceName).inspect() as Promise<ServiceInfo>) : null
        if (service && service.Spec.Labels?.[LABEL.instance] === this.opts.instanceId) {
          await this.updateService(service, (spec) => ({ ...spec, Mode: { Replicated: { Replicas: 0 } } }))
        } else {
          await ignoring([304, 404], engine.docker.getContainer(info.Id).stop({ t: 10 }))
        }
        return
      }
    })
  }

  /** The volume's folder on the control node; `node:{nodeId}:{volume}` on any other (drivers/files reach it through the agent). */
  homePath(slug: string): Promise<string> {
    const cached = this.homes.get(slug)
    if (cached) return Promise.resolve(cached)
    return this.call(async () => {
      const names = this.names(slug)
      const service = await this.findService(slug)
      const engine = await this.engineOf(service ? nodeOfService(service) : this.pinned.get(slug) ?? CONTROL_NODE)
      const volume = await orNull(engine.docker.getVolume(names.volume).inspect())
      if (!volume || volume.Labels?.[LABEL.instance] !== this.opts.instanceId) throw new SiteNotRunnableError(`The site '${slug}' has no files volume yet.`)
      const path = engine.node ? nodeHomePath(engine.nodeId, names.volume) : volume.Mountpoint
      this.homes.set(slug, path)
      return path
    })
  }

  exec(slug: string, cmd: string[], opts: { timeoutMs?: number; maxOutputBytes?: number } = {}): Promise<ExecResult> {
    return execBounded(this.startInSite, slug, cmd, opts)
  }

  runCommand(slug: string, spec: CommandSpec): Promise<CommandResult> {
    return runCommand(this.startInSite, slug, spec)
  }

  openTerminal(slug: string, spec: TerminalSpec): Promise<Terminal> {
    return openTerminal(this.startInSite, slug, spec)
  }

  /** Where every process in a site's container starts: on the node's engine, under the site's lock (as docker.ts). */
  private startInSite: StartInSite = (slug, options, attach) => this.call(() => this.locks.run(slug, async () => {
    const { engine, info } = await this.containerOfSite(slug)
    return startInContainer(engine.docker, info, slug, options, attach)
  }))

  withSitePaused<T>(slug: string, fn: () => Promise<T>): Promise<T> {
    return this.locks.run(slug, async () => {
      const { engine, info } = await this.call(() => this.containerOfSite(slug))
      return frozenWhile(engine.docker, info, slug, fn, (f) => this.call(f), this.opts.log)
    })
  }

  stats(slug: string): Promise<SiteStats | null> {
    return this.call(async () => {
      const { engine, info } = await this.containerOfSite(slug)
      return info?.State.Running ? containerStats(engine.docker, info.Id) : null
    })
  }

  // Placement

  async nodeOf(slug: string): Promise<string | null> {
    const service = await this.call(() => this.findService(slug))
    return service ? nodeOfService(service) : null
  }

  async placements(): Promise<Map<string, string>> {
    const services = await this.call(() => this.listServices())
    return new Map(services.map((s) => [s.Spec.Labels?.[LABEL.slug] ?? '', nodeOfService(s)]))
  }

  /**
   * Pins the site to `nodeId`: its service keeps its definition with the new node's label and
   * constraint and no replica (the old node's task ends; its volume stays), so the next
   * ensureSite brings the image, network and volume to the new node and starts it there. A site
   * without a service is remembered for its first ensureSite.
   */
  placeOn(slug: string, nodeId: string): Promise<void> {
    return this.call(() => this.locks.run(slug, async () => {
      const target = await this.engineOf(nodeId)
      const swarmId = await this.swarmIdOf(target)
      const service = await this.findService(slug)
      this.homes.delete(slug)
      if (!service) {
        this.pinned.set(slug, nodeId)
        return
      }
      const from = nodeOfService(service)
      if (from === nodeId) return
      await this.updateService(service, (spec) => ({
        ...spec,
        Labels: { ...spec.Labels, [NODE_LABEL]: nodeId },
        TaskTemplate: { ...spec.TaskTemplate, Placement: { ...spec.TaskTemplate.Placement, Constraints: [`node.id==${swarmId}`] } },
        Mode: { Replicated: { Replicas: 0 } },
      }))
      const old = await this.engineOf(from).catch(() => null)
      if (old) {
        await this.untilNoContainer(old, slug, true).catch((err) => this.opts.log.warn('the old node did not stop the site in time', { site: slug, node: from, error: (err as Error).message }))
      }
      await this.dropForward(slug)
      this.opts.log.info('placed a site on another node', { site: slug, from, to: nodeId })
    }))
  }

  removeVolumeOn(slug: string, nodeId: string): Promise<void> {
    return this.call(async () => {
      const engine = await this.engineOf(nodeId)
      const name = this.names(slug).volume
      const volume = await orNull(engine.docker.getVolume(name).inspect())
      if (!volume || volume.Labels?.[LABEL.instance] !== this.opts.instanceId) return
      // Swarm keeps the containers of ended tasks (its task history); they hold the volume.
      const ended = await engine.docker.listContainers({ all: true, filters: { label: siteFilter(this.opts.instanceId, slug).label, status: ['exited', 'created', 'dead'] } })
      await Promise.all(ended.map((c) => ignoring([404], engine.docker.getContainer(c.Id).remove())))
      await ignoring([404], engine.docker.getVolume(name).remove())
      if (this.homes.get(slug)?.includes(name)) this.homes.delete(slug)
    })
  }

  async choose(memoryMb: number, except: string[] = []): Promise<string> {
    return this.call(async () => {
      const [info, services] = await Promise.all([this.manager.info(), this.listServices()])
      const used = new Map<string, number>()
      for (const s of services) {
        const node = nodeOfService(s)
        used.set(node, (used.get(node) ?? 0) + (s.Spec.TaskTemplate.Resources?.Limits?.MemoryBytes ?? 0))
      }
      const candidates: NodeCapacity[] = [
        { id: CONTROL_NODE, state: 'active', memoryBytes: info.MemTotal ?? 0, usedBytes: used.get(CONTROL_NODE) ?? 0 },
        ...this.opts.nodes().map((n) => ({ id: n.id, state: n.state, memoryBytes: n.memoryBytes, usedBytes: used.get(n.id) ?? 0 })),
      ]
      const chosen = chooseNode(candidates, memoryMb, except)
      if (!chosen) throw new Error(`No active node has ${memoryMb} MB of memory free for this site; add a node (berth node join) or free one.`)
      return chosen
    })
  }

  // The work

  private async ensureLocked(spec: SiteSpec): Promise<SiteEndpoint> {
    let service = await this.findService(spec.slug)
    if (service && service.Spec.Labels?.[LABEL.siteId] !== spec.siteId) {
      // A service of this name for another site id: never hand it this one's traffic.
      this.opts.log.warn('removing a service of another site id', { site: spec.slug })
      await this.removeSiteLocked(spec.slug)
      service = null
    }
    const nodeId = service ? nodeOfService(service) : this.pinned.get(spec.slug) ?? await this.choose(spec.memoryMb)
    const engine = await this.engineOf(nodeId)
    if (service && replicasOf(service) === 1 && !serviceDrift(service, spec, specHash(spec)) && !limitsDiffer(service, spec)) {
      // The usual case: it runs as asked, on the manager's current image.
      const [info, image] = await Promise.all([this.siteContainer(engine, spec.slug), orNull(this.manager.getImage(spec.image).inspect())])
      if (info?.State.Running && (!image || info.Image === image.Id)) {
        if (info.State.Paused) await engine.docker.getContainer(info.Id).unpause()
        return this.endpointOf(engine, spec.slug, info)
      }
    }
    const started = performance.now()
    const { readonlyRootfs, imageId } = await this.prepareNode(engine, spec)
    const plan = { instanceId: this.opts.instanceId, spec, names: this.names(spec.slug), nodeId, swarmNodeId: await this.swarmIdOf(engine), readonlyRootfs }
    let before: string | null = null
    if (!service) {
      await this.manager.createService(serviceSpec(plan))
      this.pinned.delete(spec.slug)
      this.opts.log.info('created site service', { site: spec.slug, node: nodeId })
    } else {
      const current = await this.siteContainer(engine, spec.slug)
      before = current?.Id ?? null
      // A rebuilt image under the same tag: Swarm sees no change in the spec, so force one.
      const rebuilt = current !== null && current.Image !== imageId
      const wanted = serviceSpec(plan) as unknown as ServiceInfo['Spec']
      await this.updateService(service, (spec) => ({ ...wanted, TaskTemplate: { ...wanted.TaskTemplate, ForceUpdate: (spec.TaskTemplate.ForceUpdate ?? 0) + (rebuilt ? 1 : 0) } }))
      this.opts.log.info('updated site service', { site: spec.slug, node: nodeId, rebuilt })
    }
    const info = await this.untilRunning(engine, spec.slug, before, spec.sshPort)
    this.opts.log.debug('site task runs', { site: spec.slug, node: nodeId, ms: Math.round(performance.now() - started) })
    return this.endpointOf(engine, spec.slug, info)
  }

  /** What a site needs on its node before its task can run there: the image, its /28, the swarm network, the volume. */
  private async prepareNode(engine: Engine, spec: SiteSpec): Promise<{ readonlyRootfs: boolean; imageId: string }> {
    const names = this.names(spec.slug)
    const labels = siteLabels(this.opts.instanceId, spec)
    const control = await this.engineOf(CONTROL_NODE)
    const image = await this.images.ensureOn(this.managerBulk, engine.node ? engine.bulk : this.managerBulk, engine.nodeId, spec.image)
    await this.networksOf(engine).ensure(names.config, labels, {
      configOnly: true,
      ...(engine.node ? { alsoUsed: () => this.networksOf(control).used() } : {}),
    })
    await Promise.all([this.ensureSwarmNetwork(names), ensureSiteVolume(engine.docker, names.volume, labels)])
    return { readonlyRootfs: image.Config?.Labels?.[LABEL.rootfs] !== 'writable', imageId: image.Id }
  }

  /** The swarm-scoped bridge network of the site, on the manager, taking its subnet per node from `{name}-config`. */
  private async ensureSwarmNetwork(names: ServiceNames): Promise<void> {
    const found = await orNull(this.manager.getNetwork(names.network).inspect() as Promise<Docker.NetworkInspectInfo>)
    if (found && found.Name === names.network) return
    try {
      // No labels: Swarm refuses any setting beside ConfigFrom; the configuration networks carry them.
      await this.manager.createNetwork({ Name: names.network, Driver: 'bridge', Scope: 'swarm', ConfigFrom: { Network: names.config }, CheckDuplicate: true } as Docker.NetworkCreateOptions)
    } catch (err) {
      if (statusOf(err) !== 409) throw err
    }
  }

  private async removeSwarmNetwork(name: string): Promise<void> {
    const deadline = Date.now() + GONE_WITHIN_MS
    for (;;) {
      try {
        return await ignoring([404], this.manager.getNetwork(name).remove())
      } catch (err) {
        // Still in use while the node lets go of the task's endpoint.
        if (Date.now() > deadline || statusOf(err) === undefined) throw err
        await Bun.sleep(POLL_MS)
      }
    }
  }

  private async removeSiteLocked(slug: string): Promise<void> {
    const service = await this.findService(slug)
    if (!service) return
    await ignoring([404], this.manager.getService(service.ID).remove())
    await this.untilNoContainer(await this.engineOf(nodeOfService(service)), slug, false)
  }

  /** The site's running task container on its node, once it runs (not `before`, the one replaced). */
  private async untilRunning(engine: Engine, slug: string, before: string | null, sshPort: number | null): Promise<Docker.ContainerInspectInfo> {
    const deadline = Date.now() + (this.opts.startWithinMs ?? START_WITHIN_MS)
    const filters = { label: siteFilter(this.opts.instanceId, slug).label, status: ['running'] }
    let lastTaskCheck = 0
    let problem = ''
    for (;;) {
      const running = (await engine.docker.listContainers({ filters })).filter((c) => c.Id !== before)
      if (running[0]) {
        const info = await orNull(engine.docker.getContainer(running[0].Id).inspect())
        if (info?.State.Running) return info
      }
      if (Date.now() - lastTaskCheck > 1000) {
        lastTaskCheck = Date.now()
        problem = (await this.taskProblem(slug)) ?? problem
        // Swarm retries such a task for ever: say so now, so that the caller picks another port.
        if (sshPort && /port/i.test(problem) && /in use|allocated/i.test(problem)) {
          throw new HostPortTakenError(sshPort, `Host port ${sshPort} for the SSH of '${slug}' is taken on node ${engine.nodeId}.`)
        }
      }
      if (Date.now() > deadline) throw new Error(`The site '${slug}' did not start on node ${engine.nodeId} within ${Math.round((this.opts.startWithinMs ?? START_WITHIN_MS) / 1000)} s${problem ? `: ${problem}` : ''}.`)
      await Bun.sleep(POLL_MS)
    }
  }

  /** The error of the site's latest failed task, as Swarm reports it (the image missing on the node, say). */
  private async taskProblem(slug: string): Promise<string | null> {
    const tasks = (await this.manager.listTasks({ filters: { service: [this.names(slug).service] } })) as { CreatedAt: string; Status?: { Err?: string } }[]
    const failed = tasks.filter((t) => t.Status?.Err).sort((a, b) => b.CreatedAt.localeCompare(a.CreatedAt))[0]
    return failed?.Status?.Err ?? null
  }

  /** Waits until the node has no running (`runningOnly`) or no container at all of the site. */
  private async untilNoContainer(engine: Engine, slug: string, runningOnly: boolean): Promise<void> {
    const filters = { label: siteFilter(this.opts.instanceId, slug).label, ...(runningOnly ? { status: ['running', 'paused', 'restarting'] } : {}) }
    const deadline = Date.now() + GONE_WITHIN_MS
    while ((await engine.docker.listContainers({ all: !runningOnly, filters })).length > 0) {
      if (Date.now() > deadline) throw new Error(`Node ${engine.nodeId} still has the container of '${slug}' after ${GONE_WITHIN_MS / 1000} s.`)
      await Bun.sleep(POLL_MS)
    }
  }

  /** The site's container on its node: the running one, else the newest. */
  private async siteContainer(engine: Engine, slug: string): Promise<Docker.ContainerInspectInfo | null> {
    const found = await engine.docker.listContainers({ all: true, filters: siteFilter(this.opts.instanceId, slug) })
    const pick = found.sort((a, b) => Number(b.State === 'running') - Number(a.State === 'running') || b.Created - a.Created)[0]
    if (!pick) return null
    const info = await orNull(engine.docker.getContainer(pick.Id).inspect())
    return info?.Config.Labels?.[LABEL.instance] === this.opts.instanceId ? info : null
  }

  private async containerOfSite(slug: string): Promise<{ engine: Engine; info: Docker.ContainerInspectInfo | null }> {
    const service = await this.findService(slug)
    if (!service) return { engine: await this.engineOf(CONTROL_NODE), info: null }
    const engine = await this.engineOf(nodeOfService(service))
    return { engine, info: await this.siteContainer(engine, slug) }
  }

  /** The container's address on the control node; the agent's forward to it on any other. */
  private async endpointOf(engine: Engine, slug: string, info: Docker.ContainerInspectInfo): Promise<SiteEndpoint> {
    const net = info.NetworkSettings.Networks?.[this.names(slug).network]
    const address = net?.IPAddress || net?.IPAMConfig?.IPv4Address
    if (!address) throw new SiteNotRunnableError(`The site '${slug}' has no address on its network yet.`)
    if (!engine.node) return { containerId: info.Id, address, port: SITE_PORT }
    const port = await this.forward(engine.node, slug, address)
    return { containerId: info.Id, address: engine.node.address, port }
  }

  /** Points the agent's forward for the site at `target` (idempotent there; asked again only when the target changed). */
  private async forward(node: ClusterNode, slug: string, target: string): Promise<number> {
    const known = this.forwards.get(slug)
    if (known && known.nodeId === node.id && known.target === target) return known.port
    const res = await this.opts.link.fetch(node, `/v1/forwards/${encodeURIComponent(slug)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ address: target, port: SITE_PORT }),
    })
    if (!res.ok) throw new RuntimeUnavailableError(`Node ${node.id} would not forward to '${slug}' (HTTP ${res.status}: ${await res.text()}).`)
    const { port } = (await res.json()) as { port: number }
    this.forwards.set(slug, { nodeId: node.id, target, port })
    return port
  }

  /** A node's container started (Swarm replaced a task): its forward follows it before the start is reported. */
  private async forwardStarted(nodeId: string, e: SiteEvent): Promise<void> {
    if (nodeId === CONTROL_NODE) return
    const engine = await this.engineOf(nodeId)
    const info = await orNull(engine.docker.getContainer(e.containerId).inspect())
    if (info?.State.Running) await this.endpointOf(engine, e.slug, info)
  }

  private async dropForward(slug: string): Promise<void> {
    const known = this.forwards.get(slug)
    this.forwards.delete(slug)
    const node = known && this.opts.nodes().find((n) => n.id === known.nodeId)
    if (!node) return
    await this.opts.link.fetch(node, `/v1/forwards/${encodeURIComponent(slug)}`, { method: 'DELETE' })
      .catch((err) => this.opts.log.warn('could not close a forward', { site: slug, node: node.id, error: (err as Error).message }))
  }

  // Engines, services

  private async engineOf(nodeId: string): Promise<Engine> {
    await this.ready()
    if (nodeId === CONTROL_NODE) {
      let control = this.engines.get(CONTROL_NODE)
      if (!control) {
        control = { nodeId, node: null, docker: this.manager, bulk: this.managerBulk, address: this.opts.managerSocket, key: this.opts.managerSocket }
        this.engines.set(CONTROL_NODE, control)
      }
      return control
    }
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

  private async allEngines(): Promise<Engine[]> {
    const nodes = this.opts.nodes().filter((n) => n.state !== 'removed')
    return [await this.engineOf(CONTROL_NODE), ...(await Promise.all(nodes.map((n) => this.engineOf(n.id))))]
  }

  private networksOf(engine: Engine): SiteNetworks {
    let networks = this.networks.get(engine.key)
    if (!networks) {
      networks = new SiteNetworks(engine.docker, this.opts.subnetPool, this.opts.log)
      this.networks.set(engine.key, networks)
    }
    return networks
  }

  /** The node's id in the Swarm: the manager's own, or the one the agent reported at its join. */
  private async swarmIdOf(engine: Engine): Promise<string> {
    if (!engine.node) return this.controlSwarmId
    if (engine.node.swarmNodeId) return engine.node.swarmNodeId
    const info = await engine.docker.info()
    if (!info.Swarm?.NodeID) throw new RuntimeUnavailableError(`Node ${engine.nodeId} has not joined the swarm.`)
    return info.Swarm.NodeID
  }

  private async findService(slug: string): Promise<ServiceInfo | null> {
    const service = (await orNull(this.manager.getService(this.names(slug).service).inspect())) as ServiceInfo | null
    if (!service || service.Spec.Name !== this.names(slug).service || service.Spec.Labels?.[LABEL.instance] !== this.opts.instanceId) return null
    return service
  }

  private async listServices(): Promise<ServiceInfo[]> {
    return (await this.manager.listServices({ filters: { label: [`${LABEL.instance}=${this.opts.instanceId}`] } })) as unknown as ServiceInfo[]
  }

  /** Updates the service's spec as `change` makes it, at its current version (retried once when another update came first). */
  private async updateService(service: ServiceInfo, change: (spec: ServiceInfo['Spec']) => ServiceInfo['Spec']): Promise<void> {
    let current = service
    for (let attempt = 0; ; attempt++) {
      try {
        await this.manager.getService(current.ID).update({ _query: { version: current.Version.Index }, _body: change(current.Spec) } as never)
        return
      } catch (err) {
        if (attempt > 0 || statusOf(err) === undefined) throw err
        const again = (await orNull(this.manager.getService(current.ID).inspect())) as ServiceInfo | null
        if (!again) throw err
        current = again
      }
    }
  }

  private names(slug: string): ServiceNames {
    return serviceNames(this.opts.instanceId, slug)
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    await this.ready()
    return engineCall(this.opts.managerSocket, fn)
  }
}

function nodeOfService(service: ServiceInfo): string {
  return service.Spec.Labels?.[NODE_LABEL] ?? CONTROL_NODE
}

function replicasOf(service: ServiceInfo): number {
  return service.Spec.Mode?.Replicated?.Replicas ?? 1
}
