import type Docker from 'dockerode'
import type { Logger } from '../../lib/logger'
import { engineCall, ignoring, openEngine, orNull, statusOf } from './engine'
import { watchSiteEvents } from './events'
import { KeyedLock } from '../../lib/keyed-lock'
import { hostPortFree } from '../../lib/ports'
import {
  containerOptions, LABEL, limitsOf, siteFilter, siteLabels, siteNames, SITE_PORT, specHash, type SiteNames,
} from './site-container'
import { SiteNetworks } from './site-network'
import { siteAddresses } from './subnets'
import { execBounded, startInContainer, type StartInSite } from './processes'
import { containerStats, ensureSiteVolume, frozenWhile } from './container-ops'
import { runCommand } from './command'
import { openTerminal } from './terminal'
import {
  HostPortTakenError, SiteNotRunnableError, type CommandResult, type CommandSpec, type ContainerRuntime, type ExecResult, type Terminal, type TerminalSpec, type ManagedContainer, type SiteEndpoint, type SiteEvent, type SiteRuntimeState, type SiteSpec, type SiteStats, type SiteWatch, type SiteWatchHandlers,
} from './types'

export interface DockerRuntimeOptions {
  /** Unix socket of the engine, e.g. /var/run/docker.sock. */
  socketPath: string
  /** Short random id of this Berth instance, in every name and label it creates. */
  instanceId: string
  /** IPv4 range carved into one /28 per site network. */
  subnetPool: string
  /** Process limit used when a spec carries none. */
  pidsLimit: number
  /** Host address SSH ports are published on; default 0.0.0.0. */
  sshListenAddress?: string
  log: Logger
}

/** Seconds a stopping container gets before SIGKILL; docker-init makes a stop take milliseconds. */
const STOP_TIMEOUT_S = 10
const PING_TIMEOUT_MS = 2000

/**
 * The Docker engine as the container runtime (contracts in ./types.ts). Names are
 * `berth-{instance}-{slug}` (container and network) and `berth-{instance}-{slug}-home` (volume);
 * every object carries the labels of site-container.ts, and only objects labelled with this
 * instance's id are ever changed.
 *
 * Speed: a running site costs one container and one image inspect (a few ms). A new site costs
 * volume and network inspects and creates, then container create + start; the container's
 * address is fixed in advance, so no inspect follows the start. Measured here (2 cores, busy):
 * network create 70-120 ms, container create 12-30 ms, start 350-450 ms, the rest under 20 ms.
 */
export class DockerRuntime implements ContainerRuntime {
  private docker!: Docker
  private networks!: SiteNetworks
  private loading: Promise<void> | undefined
  private locks = new KeyedLock()
  /** Host mount points of site volumes, by slug; forgotten when the volume is removed. */
  private homes = new Map<string, string>()
  private networkListeners: (() => void)[] = []

  constructor(private opts: DockerRuntimeOptions) {}

  onNetworkCreated(listener: () => void): void {
    this.networkListeners.push(listener)
  }

  /** Connects the client on first use (see openEngine for why not at construction). */
  private ready(): Promise<void> {
    this.loading ??= openEngine(this.opts.socketPath).then((docker) => {
      this.docker = docker
      this.networks = new SiteNetworks(docker, this.opts.subnetPool, this.opts.log, () => this.networkListeners.forEach((listener) => listener()))
    })
    return this.loading
  }

  watch(handlers: SiteWatchHandlers): SiteWatch {
    return watchSiteEvents({ socketPath: this.opts.socketPath, instanceId: this.opts.instanceId, log: this.opts.log }, handlers)
  }

  async ping(): Promise<boolean> {
    try {
      await this.ready()
      // Bounded: a hung engine must not hang a status check. (@types/dockerode omits the
      // options argument dockerode's ping takes.)
      const ping = this.docker.ping as unknown as (opts: { abortSignal: AbortSignal }) => Promise<unknown>
      await ping.call(this.docker, { abortSignal: AbortSignal.timeout(PING_TIMEOUT_MS) })
      return true
    } catch {
      return false
    }
  }

  ensureSite(spec: SiteSpec): Promise<SiteEndpoint> {
    const full = { ...spec, pidsLimit: spec.pidsLimit > 0 ? spec.pidsLimit : this.opts.pidsLimit }
    return this.call(() => this.locks.run(spec.slug, () => this.ensureLocked(full)))
  }

  prepareSite(site: Pick<SiteSpec, 'siteId' | 'slug'>): Promise<void> {
    return this.call(() => this.locks.run(site.slug, async () => {
      const names = this.names(site.slug)
      const labels = siteLabels(this.opts.instanceId, site)
      await Promise.all([this.networks.ensure(names.network, labels), this.ensureVolume(names, labels)])
    }))
  }

  inspectSite(slug: string): Promise<SiteRuntimeState | null> {
    return this.call(async () => {
      const names = this.names(slug)
      const info = await this.inspectOwn(names.container)
      if (!info) return null
      // A frozen (paused) site is running: it answers once thawed (an archive's freeze lasts
      // well under a second). Called down, the edge would serve "being brought back" until the
      // next reconcile pass, since a thaw is no start event.
      const running = info.State.Running
      return { containerId: info.Id, running, endpoint: running ? endpointOf(info, names) : null, image: info.Config.Image }
    })
  }

  stopSite(slug: string): Promise<void> {
    return this.call(() => this.locks.run(slug, async () => {
      const info = await this.inspectOwn(this.names(slug).container)
      if (info) await ignoring([304, 404], this.docker.getContainer(info.Id).stop({ t: STOP_TIMEOUT_S }))
    }))
  }

  removeSite(slug: string, opts: { volume: boolean }): Promise<void> {
    return this.call(() => this.locks.run(slug, async () => {
      const filters = siteFilter(this.opts.instanceId, slug)
      const containers = await this.docker.listContainers({ all: true, filters })
      await Promise.all(containers.map((c) => ignoring([404], this.docker.getContainer(c.Id).remove({ force: true, v: true }))))
      const networks = await this.docker.listNetworks({ filters })
      await Promise.all(networks.map((n) => ignoring([404], this.docker.getNetwork(n.Id).remove())))
      if (opts.volume) {
        this.homes.delete(slug)
        const { Volumes: volumes } = await this.docker.listVolumes({ filters })
        await Promise.all((volumes ?? []).map((v) => ignoring([404], this.docker.getVolume(v.Name).remove())))
      }
      this.opts.log.info('removed site from the engine', { site: slug, files: opts.volume ? 'removed' : 'kept' })
    }))
  }

  listManaged(): Promise<ManagedContainer[]> {
    return this.call(async () => {
      const filters = { label: [`${LABEL.managed}=true`, `${LABEL.instance}=${this.opts.instanceId}`] }
      const found = await this.docker.listContainers({ all: true, filters })
      return found.map((c) => ({
        containerId: c.Id,
        name: (c.Names[0] ?? '').replace(/^\//, ''),
        siteId: c.Labels[LABEL.siteId] ?? '',
        slug: c.Labels[LABEL.slug] ?? '',
        running: c.State === 'running',
      }))
    })
  }

  /** Refuses (throws) for a container that is not labelled as this instance's. */
  quarantine(containerId: string): Promise<void> {
    return this.call(async () => {
      const info = await orNull(this.docker.getContainer(containerId).inspect())
      if (!info) return
      if (info.Config.Labels?.[LABEL.instance] !== this.opts.instanceId) {
        throw new Error(`Container ${containerId} is not managed by this Berth instance; leaving it alone.`)
      }
      await ignoring([304, 404], this.docker.getContainer(info.Id).stop({ t: STOP_TIMEOUT_S }))
    })
  }

  homePath(slug: string): Promise<string> {
    const cached = this.homes.get(slug)
    if (cached) return Promise.resolve(cached)
    return this.call(async () => {
      const names = this.names(slug)
      const volume = await orNull(this.docker.getVolume(names.volume).inspect())
      if (!volume || volume.Labels?.[LABEL.instance] !== this.opts.instanceId) throw new SiteNotRunnableError(`The site '${slug}' has no files volume yet.`)
      this.homes.set(slug, volume.Mountpoint)
      return volume.Mountpoint
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

  /** Where every process in a site's container starts (contract in ./processes.ts). */
  private startInSite: StartInSite = (slug, options, attach) => this.call(() => this.locks.run(slug, async () => {
    // Under the site's lock: withSitePaused holds it for a whole freeze, so a start that lands
    // in a snapshot's ~0.1 s freeze waits for the thaw instead of finding the site paused (409
    // for a deploy, an SSH key, a claim).
    return startInContainer(this.docker, await this.inspectOwn(this.names(slug).container), slug, options, attach)
  }))

  withSitePaused<T>(slug: string, fn: () => Promise<T>): Promise<T> {
    // Under the site's lock: an ensureSite meanwhile (the reconciler's) would unpause it, or
    // start a stopped one, under fn's feet.
    return this.locks.run(slug, async () => {
      const info = await this.call(() => this.inspectOwn(this.names(slug).container))
      return frozenWhile(this.docker, info, slug, fn, (f) => this.call(f), this.opts.log)
    })
  }

  stats(slug: string): Promise<SiteStats | null> {
    return this.call(async () => {
      const info = await this.inspectOwn(this.names(slug).container)
      return info?.State.Running ? containerStats(this.docker, info.Id) : null
    })
  }

  private async ensureLocked(spec: SiteSpec): Promise<SiteEndpoint> {
    const names = this.names(spec.slug)
    const [found, image] = await Promise.all([this.inspectOwn(names.container), orNull(this.docker.getImage(spec.image).inspect())])
    if (found) {
      const drift = driftOf(found, spec, names, image)
      if (!drift && (await this.resizeInPlace(found, spec))) {
        const endpoint = await this.startExisting(found, names)
        if (endpoint) return endpoint
      }
      // Checked before the removal: without the image, the old container is better than none.
      if (!image) throw imageMissing(spec.image)
      this.opts.log.info('recreating site container', { site: spec.slug, reason: drift ?? 'it would not start' })
      await ignoring([404], this.docker.getContainer(found.Id).remove({ force: true, v: true }))
    }
    if (!image) throw imageMissing(spec.image)
    const labels = siteLabels(this.opts.instanceId, spec)
    const [subnet] = await Promise.all([this.networks.ensure(names.network, labels), this.ensureVolume(names, labels)])
    const address = siteAddresses(subnet).container
    const readonlyRootfs = image.Config?.Labels?.[LABEL.rootfs] !== 'writable'
    const container = await this.docker.createContainer(containerOptions({ instanceId: this.opts.instanceId, spec, names, address, readonlyRootfs, sshListenAddress: this.opts.sshListenAddress ?? '0.0.0.0' }))
    try {
      await container.start()
    } catch (err) {
      // A start the engine refuses (500) while something else holds the SSH port: probe the port
      // itself rather than read the engine's message, whose wording changes between versions.
      const sshAddress = this.opts.sshListenAddress ?? '0.0.0.0'
      if (spec.sshPort && statusOf(err) === 500 && !hostPortFree(sshAddress, spec.sshPort)) {
        throw new HostPortTakenError(spec.sshPort, `Host port ${spec.sshPort} for the SSH of '${spec.slug}' is taken on this machine.`)
      }
      throw err
    }
    this.opts.log.debug('started site container', { site: spec.slug, container: container.id, address })
    return { containerId: container.id, address, port: SITE_PORT }
  }

  /**
   * Brings the container's memory, CPU and process limits to the spec's with `docker update`,
   * without a restart; true when they match (already or now). False when the engine refuses
   * (lowering memory below what the site uses, say): the caller recreates the container.
   */
  private async resizeInPlace(info: Docker.ContainerInspectInfo, spec: SiteSpec): Promise<boolean> {
    const wanted = limitsOf(spec)
    const host = info.HostConfig as Record<string, unknown>
    const differs = (Object.keys(wanted) as (keyof typeof wanted)[]).filter((k) => host[k] !== wanted[k])
    if (differs.length === 0) return true
    try {
      await this.docker.getContainer(info.Id).update(wanted)
      this.opts.log.info('resized site container in place', { site: spec.slug, changed: differs })
      return true
    } catch (err) {
      if (statusOf(err) === undefined) throw err
      this.opts.log.warn('could not resize in place; recreating', { site: spec.slug, error: (err as Error).message })
      return false
    }
  }

  /** Starts a stopped container; null when it will not start (its network was removed, say). */
  private async startExisting(info: Docker.ContainerInspectInfo, names: SiteNames): Promise<SiteEndpoint | null> {
    if (!info.State.Running) {
      try {
        await this.docker.getContainer(info.Id).start()
      } catch (err) {
        if (statusOf(err) === undefined) throw err
        this.opts.log.warn('site container would not start', { container: names.container, error: (err as Error).message })
        return null
      }
    } else if (info.State.Paused) {
      await this.docker.getContainer(info.Id).unpause()
    }
    return endpointOf(info, names)
  }

  private ensureVolume(names: SiteNames, labels: Record<string, string>): Promise<void> {
    return ensureSiteVolume(this.docker, names.volume, labels)
  }

  /** The container of this name when it carries this instance's label, else null. */
  private async inspectOwn(name: string): Promise<Docker.ContainerInspectInfo | null> {
    const info = await orNull(this.docker.getContainer(name).inspect())
    if (!info || info.Name !== `/${name}` || info.Config.Labels?.[LABEL.instance] !== this.opts.instanceId) return null
    return info
  }

  private names(slug: string): SiteNames {
    return siteNames(this.opts.instanceId, slug)
  }

  private async call<T>(fn: () => Promise<T>): Promise<T> {
    await this.ready()
    return engineCall(this.opts.socketPath, fn)
  }
}

const imageMissing = (image: string) => new Error(`The image ${image} is missing; build it with 'berth images build'.`)

/** Why an existing container cannot serve `spec` as it is, or null when it can. */
function driftOf(info: Docker.ContainerInspectInfo, spec: SiteSpec, names: SiteNames, image: Docker.ImageInspectInfo | null): string | null {
  const labels = info.Config.Labels ?? {}
  if (labels[LABEL.siteId] !== spec.siteId) return 'it belongs to another site id'
  if (labels[LABEL.spec] !== specHash(spec)) return 'its image or SSH port changed'
  // A rebuilt image under the same tag: run the new one. A missing image keeps what runs.
  if (image && info.Image !== image.Id) return 'its image was rebuilt'
  if (!info.NetworkSettings.Networks?.[names.network]) return 'it is not on its site network'
  if (info.State.Dead) return 'it is dead'
  return null
}

function endpointOf(info: Docker.ContainerInspectInfo, names: SiteNames): SiteEndpoint | null {
  const net = info.NetworkSettings.Networks?.[names.network]
  const address = net?.IPAMConfig?.IPv4Address || net?.IPAddress
  return address ? { containerId: info.Id, address, port: SITE_PORT } : null
}
