import type Docker from 'dockerode'
import type { Logger } from '../../lib/logger'
import { CONTROL_NODE } from '../cluster/types'
import { engineCall, ignoring, openEngine, orNull, statusOf } from './engine'
import { watchSiteEvents } from './events'
import { hostPortFree } from '../../lib/ports'
import {
  containerOptions, LABEL, limitsOf, siteFilter, siteLabels, siteNames, SITE_PORT, specHash, type SiteNames,
} from './site-container'
import { SiteNetworks } from './site-network'
import { siteAddresses } from './subnets'
import { ensureSiteVolume } from './container-ops'
import { firstHeld, HELPER_IMAGES, SiteDisks } from './site-disks'
import { SiteRuntime, STOP_TIMEOUT_S, type Engine, type SiteHost } from './site-runtime'
import { HostPortTakenError, type SiteDisk, type SiteDiskSpec, type SiteEndpoint, type SiteSpec, type SiteWatch, type SiteWatchHandlers } from './types'

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
  /** The images the disks helper may run (./site-disks.ts), the first one the engine holds; default berth/static:1 then berth/php:1 (the site images). */
  helperImages?: string[]
  log: Logger
}

const PING_TIMEOUT_MS = 2000

/**
 * The container runtime of a single box: SiteRuntime (./site-runtime.ts) over this box's one
 * engine, where a site is a container. Names are `berth-{instance}-{slug}` (container and
 * network) and `berth-{instance}-{slug}-home` (volume); every object carries the labels of
 * site-container.ts, and only objects labelled with this instance's id are ever changed.
 */
export class DockerRuntime extends SiteRuntime {
  constructor(opts: DockerRuntimeOptions) {
    super(new LocalHost(opts), opts)
  }
}

/**
 * This box's engine as the host of every site (SiteHost): the engine lookup always answers it,
 * and a site's start is a container's create and start on it.
 *
 * Speed: a running site costs one container and one image inspect (a few ms). A new site costs
 * volume and network inspects and creates, then container create + start; the container's
 * address is fixed in advance, so no inspect follows the start. Measured here (2 cores, busy):
 * network create 70-120 ms, container create 12-30 ms, start 350-450 ms, the rest under 20 ms.
 */
class LocalHost implements SiteHost {
  private docker!: Docker
  private engine!: Engine
  private networks!: SiteNetworks
  private disks: SiteDisks
  private loading: Promise<void> | undefined
  private networkListeners: (() => void)[] = []

  constructor(private opts: DockerRuntimeOptions) {
    this.disks = new SiteDisks({ instanceId: opts.instanceId, log: opts.log, imageOn: (engine) => firstHeld(engine.docker, opts.helperImages ?? HELPER_IMAGES) })
  }

  onNetworkCreated(listener: () => void): void {
    this.networkListeners.push(listener)
  }

  /** Connects the client on first use (see openEngine for why not at construction). */
  ready(): Promise<void> {
    this.loading ??= openEngine(this.opts.socketPath).then((docker) => {
      this.docker = docker
      this.engine = { nodeId: CONTROL_NODE, node: null, docker, bulk: docker, address: this.opts.socketPath, key: this.opts.socketPath }
      this.networks = new SiteNetworks(docker, this.opts.subnetPool, this.opts.log, () => this.networkListeners.forEach((listener) => listener()))
    })
    return this.loading
  }

  call<T>(fn: () => Promise<T>): Promise<T> {
    return engineCall(this.opts.socketPath, fn)
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

  async siteOn(slug: string): Promise<{ engine: Engine; info: Docker.ContainerInspectInfo | null }> {
    return { engine: this.engine, info: await this.inspectOwn(this.names(slug).container) }
  }

  async volumeOn(): Promise<Engine> {
    return this.engine
  }

  async allEngines(): Promise<Engine[]> {
    return [this.engine]
  }

  async endpointOf(_engine: Engine, slug: string, info: Docker.ContainerInspectInfo): Promise<SiteEndpoint | null> {
    return endpointOf(info, this.names(slug))
  }

  async prepare(site: SiteDiskSpec): Promise<void> {
    const names = this.names(site.slug)
    const labels = siteLabels(this.opts.instanceId, site)
    await Promise.all([this.networks.ensure(names.network, labels), this.ensureVolume(names, labels, site.diskGb)])
  }

  async diskOf(engine: Engine, slug: string): Promise<SiteDisk | null> {
    const volume = this.names(slug).volume
    if (!(await orNull(this.docker.getVolume(volume).inspect()))) return null
    return this.disks.usage(engine, volume, 0)
  }

  /** A smaller disk is made with the container stopped; the caller's next ensureSite starts it. */
  async resizeDisk(site: SiteDiskSpec): Promise<void> {
    await this.disks.bringTo(this.engine, this.names(site.slug).volume, site.diskGb, () => this.stop(site.slug))
  }

  async stop(slug: string): Promise<void> {
    const info = await this.inspectOwn(this.names(slug).container)
    if (info) await ignoring([304, 404], this.docker.getContainer(info.Id).stop({ t: STOP_TIMEOUT_S }))
  }

  async remove(slug: string, opts: { volume: boolean }): Promise<void> {
    const filters = siteFilter(this.opts.instanceId, slug)
    const containers = await this.docker.listContainers({ all: true, filters })
    await Promise.all(containers.map((c) => ignoring([404], this.docker.getContainer(c.Id).remove({ force: true, v: true }))))
    const networks = await this.docker.listNetworks({ filters })
    await Promise.all(networks.map((n) => ignoring([404], this.docker.getNetwork(n.Id).remove())))
    if (opts.volume) {
      const { Volumes: volumes } = await this.docker.listVolumes({ filters })
      await Promise.all((volumes ?? []).map((v) => this.disks.removeVolume(this.engine, v.Name)))
    }
    this.opts.log.info('removed site from the engine', { site: slug, files: opts.volume ? 'removed' : 'kept' })
  }

  /** Nothing on one box starts a container again but Berth and its restart policy, which a stop ends. */
  async release(): Promise<boolean> {
    return false
  }

  async start(spec: SiteSpec): Promise<SiteEndpoint> {
    const names = this.names(spec.slug)
    const [found, image] = await Promise.all([this.inspectOwn(names.container), orNull(this.docker.getImage(spec.image).inspect())])
    if (found && !(await this.disks.mounted(this.engine, names.volume))) {
      // Its disk is not mounted (the box restarted, and the engine's restart policy ran the
      // container on the empty, immutable folder beneath): stopped, mounted, then started below.
      if (found.State.Running) await ignoring([304, 404], this.docker.getContainer(found.Id).stop({ t: STOP_TIMEOUT_S }))
      await this.ensureVolume(names, siteLabels(this.opts.instanceId, spec), spec.diskGb)
      found.State.Running = false
    }
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
    const [subnet] = await Promise.all([this.networks.ensure(names.network, labels), this.ensureVolume(names, labels, spec.diskGb)])
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

  /** The site's volume and its disk of `diskGb`, mounted. */
  private async ensureVolume(names: SiteNames, labels: Record<string, string>, diskGb: number): Promise<void> {
    await ensureSiteVolume(this.docker, names.volume, labels)
    // Mounted already (made while the checkout was paid for): a stat, no engine exec.
    if (!(await this.disks.mounted(this.engine, names.volume))) await this.disks.ensure(this.engine, names.volume, diskGb)
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
