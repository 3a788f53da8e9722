import type { HostingType } from '../../core/enums'
import { HostPortTakenError, type ContainerRuntime, type SiteEndpoint, type SiteSpec } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { PlansService } from '../plans'
import type { SitesRepository } from './repository'

export interface SiteRunnerDeps {
  /**
   * `find`: the site's record as the store holds it now, read again just before the runtime is
   * asked (a caller's row may be older than a change made meanwhile: a reconcile pass's row from
   * before a deployment moved the site to the app image would put the old image back). Absent: the
   * caller's row (tests).
   */
  sites: Pick<SitesRepository, 'replaceSshPort'> & Partial<Pick<SitesRepository, 'find'>>
  plans: Pick<PlansService, 'get'>
  runtime: ContainerRuntime
  /** config `containers`: the image of each hosting type and of app sites, and the process limit of every site. */
  containers: { images: Record<HostingType, string>; appImage: string; pidsLimit: number }
  log: Logger
  /** Resolves once the site's web server answers anything; throws after a while (drivers/runtime/first-answer.ts). */
  waitForAnswer: (endpoint: SiteEndpoint) => Promise<void>
  /**
   * True while the site's files are being restored (an archive `restoring`: an archive restore,
   * or the restore of a move or an evacuation): `repair` leaves such a site alone, since the
   * restore starts it itself once its home is back. Absent: never.
   */
  restoring?: (siteId: string) => boolean
  /**
   * What runs beside the site's container (its databases, issue 40): `started` by every `run`
   * once the container is there (the site's network exists then; it acts for an active site
   * only), `stopped` by a `stop` that is not for a restart (it acts when the site no longer runs:
   * suspended, pending deletion). Absent: nothing.
   */
  companions?: { started(site: SiteRow): Promise<void>; stopped(slug: string): Promise<void> }
}

/**
 * The one place that brings a site's container in line with its record in the store, and that
 * knows where each running site answers. Provisioning, scale and restore (the apply job),
 * archive restores, the deletion reaper and the reconcile pass all go through it, so they agree
 * on the container's spec, on what a taken SSH port means and on the endpoint table the edge
 * reads.
 */
export class SiteRunner {
  /** Where each running site answers, as last seen by `run` or the engine. */
  private endpoints = new Map<string, SiteEndpoint>()
  /** Sites whose container is known not to run: the edge answers them without asking the engine. */
  private down = new Set<string>()
  /** Sites with a `run` under way, and a promise settled when the last one ends. */
  private busy = new Map<string, { count: number; promise: Promise<void>; resolve: () => void }>()
  /** Per site, the container last seen started or running: a `die` of any other is stale. */
  private current = new Map<string, string>()
  /** Moves whenever a site turns known-down or stops being so (views of site status cache on it). */
  private generation = 0

  constructor(private d: SiteRunnerDeps) {}

  /**
   * The runtime spec of a site: its plan's limits and the image of its hosting type, or the app
   * image once the site deployed a source (sites.runtime set, issue 39).
   */
  spec(site: SiteRow): SiteSpec {
    const plan = this.d.plans.get(site.planSlug)
    return {
      siteId: site.id,
      slug: site.slug,
      hostingType: plan.hosting_type,
      image: site.runtime !== null ? this.d.containers.appImage : this.d.containers.images[plan.hosting_type],
      memoryMb: plan.features.memory_mb,
      cpuCores: plan.features.cpu_cores,
      pidsLimit: this.d.containers.pidsLimit,
      diskGb: plan.features.disk_gb,
      sshPort: plan.features.ssh ? site.sshPort : null,
    }
  }

  /**
   * Runs the site's container as its record says (created, started, resized in place or
   * recreated on its volume, files kept) and records where it answers; with `waitForAnswer`,
   * resolves only once its web server answers. When the site's SSH port turns out to be taken on
   * the host, the site gets another port in the store and the error is thrown: the next run (a
   * job's retry, the reconcile pass) uses the new port. Idempotent.
   */
  async run(site: SiteRow, opts: { waitForAnswer?: boolean } = {}): Promise<SiteEndpoint> {
    const done = this.begin(site.slug)
    try {
      let endpoint: SiteEndpoint
      try {
        const current = this.d.sites.find?.(site.id) ?? site
        endpoint = await this.d.runtime.ensureSite(this.spec(current))
        // Its databases come up (or take the plan's new limits) before the site is said to answer.
        await this.d.companions?.started(current)
      } catch (err) {
        if (err instanceof HostPortTakenError) {
          this.d.sites.replaceSshPort(site.id, err.port)
          this.d.log.warn('the SSH port of a site is taken on this machine; it moves to another', { site: site.slug, port: err.port })
        }
        throw err
      }
      // With waitForAnswer, the edge keeps answering "being brought back" until the site answers.
      if (opts.waitForAnswer) await this.d.waitForAnswer(endpoint)
      this.endpoints.set(site.slug, endpoint)
      this.current.set(site.slug, endpoint.containerId)
      this.up(site.slug)
      return endpoint
    } finally {
      done()
    }
  }

  /**
   * `run` for a repair (the healer after a death, the reconcile pass): the one place that
   * decides whether this process may start a site it did not set out to change. Not started
   * (null, nothing asked of the runtime) while the site's files are being restored (an archive
   * restore, a move's or an evacuation's restore: it brings the site back itself, on the
   * restored home) or while a `run` or `holding` of it is under way here (a provisioning, a
   * scale, a move: their own start follows). Decided just before the runtime is asked.
   */
  async repair(site: SiteRow, opts: { waitForAnswer?: boolean } = {}): Promise<SiteEndpoint | null> {
    const why = this.busy.has(site.slug) ? 'a run of it is under way' : this.d.restoring?.(site.id) ? 'its files are being restored' : null
    if (why) {
      this.d.log.debug('a repair leaves the site alone', { site: site.slug, why })
      return null
    }
    return this.run(site, opts)
  }

  /**
   * Stops the site's container (files and network kept); the edge stops sending it requests at
   * once. `forRestart`: a `run` follows at once (ContainerRuntime.stopSite).
   */
  async stop(slug: string, opts: { forRestart?: boolean } = {}): Promise<void> {
    this.markDown(slug)
    await this.d.runtime.stopSite(slug, opts)
    if (!opts.forRestart) await this.d.companions?.stopped(slug)
  }

  /** Removes the site's container and network, and its files when `volume` is true. */
  async remove(slug: string, opts: { volume: boolean }): Promise<void> {
    this.markDown(slug)
    await this.d.runtime.removeSite(slug, opts)
  }

  /**
   * The site's container is not running (it died, was stopped or removed, by Berth or behind
   * its back): the edge answers at once without trying it, until a `run` brings it back. With the
   * container's id, only if it is the one the site runs on (else false: a stale event).
   */
  markDown(slug: string, containerId?: string): boolean {
    // An event of a container since replaced (the old one of a recreate, or of a move whose new
    // container's start was reported first: two nodes' events, two streams) says nothing of the new.
    const known = this.endpoints.get(slug)?.containerId ?? this.current.get(slug)
    if (containerId !== undefined && known !== undefined && known !== containerId) return false
    this.endpoints.delete(slug)
    if (!this.down.has(slug)) this.generation++
    this.down.add(slug)
    return true
  }

  /**
   * The site's container was started by someone other than `run` (docker start by hand): look
   * it up again on the next request. Ignored while a `run` of the site is under way (its own
   * start), which records the endpoint itself once the site answers.
   */
  markStarted(slug: string, containerId?: string): void {
    if (containerId !== undefined) this.current.set(slug, containerId)
    if (this.busy.has(slug)) return
    this.endpoints.delete(slug)
    this.up(slug)
  }

  /** True when the site's container is known not to run (the edge answers its 503 page without trying it). */
  isDown(slug: string): boolean {
    return this.down.has(slug)
  }

  /** The sites whose container is known not to run. */
  downSlugs(): ReadonlySet<string> {
    return this.down
  }

  /** Moves whenever `isDown` of any site changed. */
  version(): number {
    return this.generation
  }

  private up(slug: string): void {
    if (this.down.delete(slug)) this.generation++
  }

  /** True when the site's container is known to run and answer (a `run` succeeded since it last went down). */
  isUp(slug: string): boolean {
    return this.endpoints.has(slug)
  }

  /**
   * Runs `fn` counted as a `run` of the site under way: the healer waits for it to end before it
   * looks at the site again (`settled`), and a start event meanwhile is left to it. For work that
   * takes a site down and brings it back itself (a move to another node, an evacuation).
   */
  async holding<T>(slug: string, fn: () => Promise<T>): Promise<T> {
    const done = this.begin(slug)
    try {
      return await fn()
    } finally {
      done()
    }
  }

  /** True while a `run` or `holding` of the site is under way here (a provisioning, a scale, a move). */
  underWay(slug: string): boolean {
    return this.busy.has(slug)
  }

  /** Resolves once no `run` of the site is under way. */
  async settled(slug: string): Promise<void> {
    while (this.busy.has(slug)) await this.busy.get(slug)!.promise
  }

  private begin(slug: string): () => void {
    const outer = this.busy.get(slug)
    const entry = outer ?? { count: 0, ...Promise.withResolvers<void>() }
    entry.count++
    this.busy.set(slug, entry)
    return () => {
      if (--entry.count > 0) return
      this.busy.delete(slug)
      entry.resolve()
    }
  }

  /**
   * Creates, in the background, the network and volume of a site that a checkout has just
   * reserved, so that provisioning after payment only makes the container. Best effort:
   * provisioning creates whatever is missing.
   */
  prepare(site: Pick<SiteRow, 'id' | 'slug' | 'planSlug'>): void {
    const diskGb = this.d.plans.get(site.planSlug).features.disk_gb
    this.d.runtime.prepareSite({ siteId: site.id, slug: site.slug, diskGb }).catch((err) => this.d.log.warn('could not prepare a reserved site', { site: site.slug, error: (err as Error).message }))
  }

  /** Undoes `prepare` for a reservation that ended without a site (canceled, expired), in the background. */
  release(slug: string): void {
    this.remove(slug, { volume: true }).catch((err) => this.d.log.warn('could not release a reserved site', { site: slug, error: (err as Error).message }))
  }

  /**
   * What is known without asking the engine: the endpoint, null when the container is known to
   * be down, undefined when the engine must be asked (endpointOf).
   */
  knownEndpoint(slug: string): SiteEndpoint | null | undefined {
    const known = this.endpoints.get(slug)
    if (known) return known
    return this.down.has(slug) ? null : undefined
  }

  /**
   * Where the running site answers: from memory, or, for a site not seen since Berth started,
   * from the engine (once); null when its container is not running.
   */
  async endpointOf(slug: string): Promise<SiteEndpoint | null> {
    const known = this.endpoints.get(slug)
    if (known) return known
    if (this.down.has(slug)) return null
    let found: Awaited<ReturnType<ContainerRuntime['inspectSite']>>
    try {
      found = await this.d.runtime.inspectSite(slug)
    } catch {
      return null // the engine did not answer: nothing is known, ask again next time
    }
    if (!found?.running || !found.endpoint) {
      // Known down until a run or a start event says otherwise: no engine call per request.
      if (!this.down.has(slug)) this.generation++
      this.down.add(slug)
      return null
    }
    this.endpoints.set(slug, found.endpoint)
    this.current.set(slug, found.endpoint.containerId)
    return found.endpoint
  }
}
