import type Docker from 'dockerode'
import { KeyedLock } from '../../lib/keyed-lock'
import type { Logger } from '../../lib/logger'
import { nodeHomePath, type ClusterNode } from '../cluster/types'
import { runCommand } from './command'
import { containerStats, frozenWhile } from './container-ops'
import { ignoring, orNull, type EngineAddress } from './engine'
import { execBounded, startInContainer, type StartInSite } from './processes'
import { LABEL, siteNames } from './site-container'
import { openTerminal } from './terminal'
import { HomePaths } from './home-paths'
import {
  SiteNotRunnableError, type CommandResult, type CommandSpec, type ContainerRuntime, type ExecOptions, type ExecResult, type ManagedContainer, type SiteEndpoint, type SiteDisk, type SiteDiskSpec, type SiteRuntimeState, type SiteSpec, type SiteStats, type SiteWatch, type SiteWatchHandlers, type Terminal, type TerminalSpec,
} from './types'

/** An engine a site's container may run on: this box's, or a node's reached through its agent. */
export interface Engine {
  /** The Berth node (`control` for this box). */
  nodeId: string
  /** null for this box's engine. */
  node: ClusterNode | null
  docker: Docker
  /** The same engine without a request timeout: image transfers. */
  bulk: Docker
  address: EngineAddress
  /** Changes when the node's address or certificate does: a new client then. */
  key: string
}

/**
 * Where each site's container runs and how it is made to run there: the one thing a single box
 * (./docker.ts: a container on this box's engine) and a cluster (./swarm/cluster-runtime.ts: a
 * one-replica Swarm service pinned to a node, its container on that node's engine) do
 * differently. Everything else about a site's container (inspect, exec, commands, terminals,
 * freeze, stats, its home's path, the containers list, quarantine) is SiteRuntime's, the same
 * code on every engine.
 */
export interface SiteHost {
  /** Connects, once; throws when the engine cannot be used. */
  ready(): Promise<void>
  /** Runs engine calls: an engine that does not answer becomes a RuntimeUnavailableError naming it. */
  call<T>(fn: () => Promise<T>): Promise<T>
  /** The engine lookup: the engine the site's container runs on, and that container (this instance's) or null. */
  siteOn(slug: string): Promise<{ engine: Engine; info: Docker.ContainerInspectInfo | null }>
  /** The engine that holds (or will hold) the site's volume. */
  volumeOn(slug: string): Promise<Engine>
  /** Every engine that may hold this instance's containers (a cluster: the nodes but removed ones). */
  allEngines(): Promise<Engine[]>
  /** Where the site's running container answers the edge. */
  endpointOf(engine: Engine, slug: string, info: Docker.ContainerInspectInfo): Promise<SiteEndpoint | null>
  /** Brings the site's container to `spec`, running; called under the site's lock. */
  start(spec: SiteSpec): Promise<SiteEndpoint>
  /** The site's network and volume (its disk of `diskGb`) before any container; under the site's lock. */
  prepare(site: SiteDiskSpec): Promise<void>
  /** The site's disk on `engine` (ContainerRuntime.siteDisk). */
  diskOf(engine: Engine, slug: string): Promise<SiteDisk | null>
  /** Under the site's lock (ContainerRuntime.resizeSiteDisk). */
  resizeDisk(site: SiteDiskSpec): Promise<void>
  /** Under the site's lock (ContainerRuntime.stopSite). */
  stop(slug: string, opts: { forRestart?: boolean }): Promise<void>
  /** Under the site's lock (ContainerRuntime.removeSite); the volume too when asked. */
  remove(slug: string, opts: { volume: boolean }): Promise<void>
  /** Stops what would start an unknown container again (a Swarm service: scaled to 0); false when nothing would. */
  release(engine: Engine, info: Docker.ContainerInspectInfo): Promise<boolean>
  watch(handlers: SiteWatchHandlers): SiteWatch
  ping(): Promise<boolean>
  onNetworkCreated(listener: () => void): void
}

export interface SiteRuntimeOptions {
  instanceId: string
  /** Process limit used when a spec carries none. */
  pidsLimit: number
  log: Logger
}

/** Seconds a stopping container gets before SIGKILL; docker-init makes a stop take milliseconds. */
export const STOP_TIMEOUT_S = 10

/**
 * The container runtime (contracts in ./types.ts), one implementation for a single box and a
 * cluster, over a SiteHost: each operation asks the host which engine holds the site (the
 * engine lookup) and works on that engine's container the same way. Per site, every change
 * runs under one lock (KeyedLock), so a freeze, a start and a stop never overlap.
 */
export class SiteRuntime implements ContainerRuntime {
  private locks = new KeyedLock()

  constructor(
    private host: SiteHost,
    private opts: SiteRuntimeOptions,
    /** Host mount points of site volumes (`node:{id}:{volume}` on another node), by slug; the host forgets those that move. */
    private homes: HomePaths = new HomePaths(),
  ) {}

  onNetworkCreated(listener: () => void): void {
    this.host.onNetworkCreated(listener)
  }

  watch(handlers: SiteWatchHandlers): SiteWatch {
    return this.host.watch(handlers)
  }

  /** Whether the engine answers within 2 s (a hung engine must not hang a status check). */
  ping(): Promise<boolean> {
    return this.host.ping()
  }

  ensureSite(spec: SiteSpec): Promise<SiteEndpoint> {
    const full = { ...spec, pidsLimit: spec.pidsLimit > 0 ? spec.pidsLimit : this.opts.pidsLimit }
    return this.call(() => this.locks.run(spec.slug, () => this.host.start(full)))
  }

  prepareSite(site: SiteDiskSpec): Promise<void> {
    return this.call(() => this.locks.run(site.slug, () => this.host.prepare(site)))
  }

  siteDisk(slug: string): Promise<SiteDisk | null> {
    return this.call(async () => this.host.diskOf(await this.host.volumeOn(slug), slug))
  }

  resizeSiteDisk(site: SiteDiskSpec): Promise<void> {
    return this.call(() => this.locks.run(site.slug, () => this.host.resizeDisk(site)))
  }

  inspectSite(slug: string): Promise<SiteRuntimeState | null> {
    return this.call(async () => {
      const { engine, info } = await this.host.siteOn(slug)
      if (!info) return null
      // A frozen (paused) site is running: it answers once thawed (an archive's freeze lasts
      // well under a second). Called down, the edge would serve "being brought back" until the
      // next reconcile pass, since a thaw is no start event.
      const running = info.State.Running
      return { containerId: info.Id, running, endpoint: running ? await this.host.endpointOf(engine, slug, info) : null, image: info.Config.Image.split('@')[0] ?? info.Config.Image }
    })
  }

  stopSite(slug: string, opts: { forRestart?: boolean } = {}): Promise<void> {
    return this.call(() => this.locks.run(slug, () => this.host.stop(slug, opts)))
  }

  removeSite(slug: string, opts: { volume: boolean }): Promise<void> {
    return this.call(() => this.locks.run(slug, async () => {
      if (!opts.volume) return this.host.remove(slug, opts)
      this.homes.forget(slug)
      await this.host.remove(slug, opts)
      // And after: a lookup that began meanwhile must not keep the removed volume's path.
      this.homes.forget(slug)
    }))
  }

  /** Every engine's containers of this instance; another node's engine that does not answer is left out (logged). */
  listManaged(): Promise<ManagedContainer[]> {
    return this.call(async () => {
      const filters = { label: [`${LABEL.managed}=true`, `${LABEL.instance}=${this.opts.instanceId}`] }
      const lists = await Promise.all((await this.host.allEngines()).map(async (engine) => {
        try {
          return await engine.docker.listContainers({ all: true, filters })
        } catch (err) {
          if (engine.node === null) throw err
          this.opts.log.warn('could not list the containers of a node', { node: engine.nodeId, error: (err as Error).message })
          return []
        }
      }))
      return lists.flat().map(managedContainer)
    })
  }

  /**
   * Stops a container the store does not know, on whichever engine has it (what would start it
   * again first: SiteHost.release). Refuses (throws) for a container not labelled as this instance's.
   */
  quarantine(containerId: string): Promise<void> {
    return this.call(async () => {
      const engines = await this.host.allEngines()
      for (const engine of engines) {
        const found = orNull(engine.docker.getContainer(containerId).inspect())
        // Another node's engine that does not answer cannot hold it as far as anyone can tell.
        const info = await (engine.node ? found.catch(() => null) : found)
        if (!info) continue
        if (info.Config.Labels?.[LABEL.instance] !== this.opts.instanceId) {
          throw new Error(`Container ${containerId} is not managed by this Berth instance; leaving it alone.`)
        }
        if (!(await this.host.release(engine, info))) await ignoring([304, 404], engine.docker.getContainer(info.Id).stop({ t: STOP_TIMEOUT_S }))
        return
      }
    })
  }

  /** The volume's folder on this box; `node:{nodeId}:{volume}` on another node (drivers/files reach it through the agent). */
  homePath(slug: string): Promise<string> {
    const cached = this.homes.get(slug)
    if (cached) return Promise.resolve(cached)
    return this.call(async () => {
      // Not remembered when the site's placement changed while this looked (HomePaths).
      const ticket = this.homes.ticket()
      const name = siteNames(this.opts.instanceId, slug).volume
      const engine = await this.host.volumeOn(slug)
      const volume = await orNull(engine.docker.getVolume(name).inspect())
      if (!volume || volume.Labels?.[LABEL.instance] !== this.opts.instanceId) throw new SiteNotRunnableError(`The site '${slug}' has no files volume yet.`)
      const path = engine.node ? nodeHomePath(engine.nodeId, name) : volume.Mountpoint
      this.homes.remember(slug, path, ticket)
      return path
    })
  }

  exec(slug: string, cmd: string[], opts: ExecOptions = {}): Promise<ExecResult> {
    return execBounded(this.startInSite, slug, cmd, opts)
  }

  runCommand(slug: string, spec: CommandSpec): Promise<CommandResult> {
    return runCommand(this.startInSite, slug, spec)
  }

  openTerminal(slug: string, spec: TerminalSpec): Promise<Terminal> {
    return openTerminal(this.startInSite, slug, spec)
  }

  /** Where every process in a site's container starts (contract in ./processes.ts), on its engine. */
  private startInSite: StartInSite = (slug, options, attach) => this.call(() => this.locks.run(slug, async () => {
    // Under the site's lock: withSitePaused holds it for a whole freeze, so a start that lands
    // in a snapshot's ~0.1 s freeze waits for the thaw instead of finding the site paused (409
    // for a deploy, an SSH key, a claim).
    const { engine, info } = await this.host.siteOn(slug)
    return startInContainer(engine.docker, info, slug, options, attach)
  }))

  withSitePaused<T>(slug: string, fn: () => Promise<T>): Promise<T> {
    // Under the site's lock: an ensureSite meanwhile (the reconciler's) would unpause it, or
    // start a stopped one, under fn's feet.
    return this.locks.run(slug, async () => {
      const { engine, info } = await this.call(() => this.host.siteOn(slug))
      return frozenWhile(engine.docker, info, slug, fn, (f) => this.call(f), this.opts.log)
    })
  }

  stats(slug: string): Promise<SiteStats | null> {
    return this.call(async () => {
      const { engine, info } = await this.host.siteOn(slug)
      return info?.State.Running ? containerStats(engine.docker, info.Id) : null
    })
  }

  /** Runs under the site's lock too: a change that must not overlap the site's others (a Placement's). */
  protected underLock<T>(slug: string, fn: () => Promise<T>): Promise<T> {
    return this.call(() => this.locks.run(slug, fn))
  }

  /** Connects first (SiteHost.ready), then runs `fn` as the host runs engine calls. */
  protected async call<T>(fn: () => Promise<T>): Promise<T> {
    await this.host.ready()
    return this.host.call(fn)
  }
}

/** A listed container as ContainerRuntime.listManaged answers it. */
export function managedContainer(c: Docker.ContainerInfo): ManagedContainer {
  return {
    containerId: c.Id,
    name: (c.Names[0] ?? '').replace(/^\//, ''),
    siteId: c.Labels[LABEL.siteId] ?? '',
    slug: c.Labels[LABEL.slug] ?? '',
    running: c.State === 'running',
  }
}
