import type { Server } from 'bun'
import {
  DiskTooSmallError, SiteNotRunnableError, type SiteDisk, type SiteDiskSpec, type CommandResult, type ContainerRuntime, type ExecResult, type Terminal, type ManagedContainer, type SiteEndpoint, type SiteEvent, type SiteRuntimeState, type SiteSpec, type SiteStats, type SiteWatch, type SiteWatchHandlers,
} from '../../src/drivers/runtime/types'

export type RuntimeCall =
  | { op: 'ensureSite'; slug: string; spec: SiteSpec }
  | { op: 'prepareSite' | 'stopSite' | 'inspectSite'; slug: string }
  | { op: 'removeSite'; slug: string; volume: boolean }

/**
 * A container runtime for in-process service tests that records what it is asked and keeps a
 * per-slug state (running, spec, volume), holding the contracts of ContainerRuntime (idempotent
 * operations). Every "container" is one real HTTP server on 127.0.0.1, so that code waiting for
 * a site to answer gets an answer. End-to-end tests use the Docker runtime instead.
 */
export class RecordingRuntime implements ContainerRuntime {
  calls: RuntimeCall[] = []
  sites = new Map<string, { siteId: string; spec: SiteSpec | null; running: boolean; volume: boolean }>()
  private server: Server<undefined>

  constructor() {
    this.server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('site') })
  }

  close(): void {
    void this.server.stop(true)
  }

  /** Calls of one operation, optionally for one slug. */
  callsOf(op: RuntimeCall['op'], slug?: string): RuntimeCall[] {
    return this.calls.filter((c) => c.op === op && (slug === undefined || c.slug === slug))
  }

  async ping() {
    return true
  }

  async ensureSite(spec: SiteSpec): Promise<SiteEndpoint> {
    this.calls.push({ op: 'ensureSite', slug: spec.slug, spec })
    this.sites.set(spec.slug, { siteId: spec.siteId, spec, running: true, volume: true })
    return this.endpoint()
  }

  /** The recording runtime's disks: `disks` set by a test, else none. */
  disks = new Map<string, SiteDisk>()
  resized: SiteDiskSpec[] = []

  async siteDisk(slug: string): Promise<SiteDisk | null> {
    return this.disks.get(slug) ?? null
  }

  async resizeSiteDisk(site: SiteDiskSpec): Promise<void> {
    const disk = this.disks.get(site.slug)
    const wanted = site.diskGb * 1024 ** 3
    if (disk && disk.usedBytes > wanted) throw new DiskTooSmallError(disk.usedBytes, wanted, `The site '${site.slug}' uses more than ${site.diskGb} GB.`)
    this.resized.push(site)
    if (disk) this.disks.set(site.slug, { ...disk, limitBytes: wanted, availableBytes: wanted - disk.usedBytes })
  }

  async prepareSite(site: SiteDiskSpec) {
    this.calls.push({ op: 'prepareSite', slug: site.slug })
    if (!this.sites.has(site.slug)) this.sites.set(site.slug, { siteId: site.siteId, spec: null, running: false, volume: true })
  }

  async inspectSite(slug: string): Promise<SiteRuntimeState | null> {
    this.calls.push({ op: 'inspectSite', slug })
    const s = this.sites.get(slug)
    if (!s?.spec) return null
    return { containerId: `c-${slug}`, running: s.running, endpoint: s.running ? this.endpoint() : null, image: s.spec.image }
  }

  async stopSite(slug: string) {
    this.calls.push({ op: 'stopSite', slug })
    const s = this.sites.get(slug)
    if (s) s.running = false
  }

  async removeSite(slug: string, opts: { volume: boolean }) {
    this.calls.push({ op: 'removeSite', slug, volume: opts.volume })
    const s = this.sites.get(slug)
    if (!s) return
    if (opts.volume) this.sites.delete(slug)
    else Object.assign(s, { spec: null, running: false })
  }

  async listManaged(): Promise<ManagedContainer[]> {
    return [...this.sites.entries()].filter(([, s]) => s.spec).map(([slug, s]) => ({ containerId: `c-${slug}`, name: `c-${slug}`, siteId: s.siteId, slug, running: s.running }))
  }

  async quarantine() {}

  async homePath(slug: string): Promise<string> {
    throw new SiteNotRunnableError(`The site '${slug}' has no files volume in the recording runtime.`)
  }

  async exec(slug: string): Promise<ExecResult> {
    throw new SiteNotRunnableError(`The site '${slug}' cannot run commands in the recording runtime.`)
  }

  async runCommand(slug: string): Promise<CommandResult> {
    throw new SiteNotRunnableError(`The site '${slug}' cannot run commands in the recording runtime.`)
  }

  async openTerminal(slug: string): Promise<Terminal> {
    throw new SiteNotRunnableError(`The site '${slug}' has no terminal in the recording runtime.`)
  }

  withSitePaused<T>(_slug: string, fn: () => Promise<T>): Promise<T> {
    return fn()
  }

  async stats(): Promise<SiteStats | null> {
    return null
  }

  /** Who watches this runtime's events (the composition root's healer), for `emit`. */
  watchers: SiteWatchHandlers[] = []

  /** Watching starts with an engine that answers, as a healthy one does. */
  watch(handlers: SiteWatchHandlers): SiteWatch {
    this.watchers.push(handlers)
    handlers.onReachable?.(true)
    return { close: () => void this.watchers.splice(this.watchers.indexOf(handlers), 1) }
  }

  /** Tells the watchers the engine stopped (or started again) answering. */
  setReachable(reachable: boolean): void {
    for (const w of this.watchers) w.onReachable?.(reachable)
  }

  /** Reports an event to the watchers, as the engine would (a test's "docker kill"). */
  emit(e: SiteEvent): void {
    for (const w of this.watchers) w.onEvent(e)
  }

  private endpoint(): SiteEndpoint {
    return { containerId: 'c', address: '127.0.0.1', port: this.server.port! }
  }
}
