import type { SiteModuleFlags, SiteState, SiteTarget } from '../../edge/types'
import type { SiteStatus } from '../../core/enums'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { SitesRepository } from './repository'
import type { SiteEndpoint } from '../../drivers/runtime/types'
import type { SiteRunner } from './runner'

/** The edge's state of each site status (a deleted site is not found at all). */
const STATE: Record<Exclude<SiteStatus, 'deleted'>, SiteState> = {
  active: 'serving',
  provisioning: 'provisioning',
  suspended: 'suspended',
  pending_deletion: 'pending_deletion',
  failed: 'failed',
}

/**
 * Answers the edge proxy's question, "which container serves this slug?", on every proxied
 * request: the site from memory, reloaded when sites, domains or plans change (their areas'
 * version, `Store.versionOf`; a rate-limit hit or a job leaves it be); its endpoint from the
 * SiteRunner (which looks a running site up in the engine once after a restart).
 */
export class SiteDirectory {
  private cache = new Map<string, SiteRow | null>()
  /** The last target built per slug, with the row and endpoint it came from. */
  private targets = new Map<string, { site: SiteRow; endpoint: SiteEndpoint; target: SiteTarget }>()
  private version = -1
  private source: () => number

  /** The upstream each slug's last target had, to tell the edge when one moved (`onUpstreamMoved`). */
  private upstreams = new Map<string, { address: string; port: number }>()
  private moved: ((address: string, port: number) => void) | null = null

  /** Linked domain names (and their www) to the slug of their site, rebuilt with the cache. */
  private linked: Map<string, string> | null = null

  constructor(private d: {
    store: Store
    sites: Pick<SitesRepository, 'findLiveBySlug' | 'find'>
    runner: Pick<SiteRunner, 'endpointOf' | 'knownEndpoint'>
    domains: { linked(): { name: string; siteId: string }[] }
    /** The AI modules acting on a site's traffic, or undefined when none is (the edge's plain path). */
    modules?: (site: SiteRow) => SiteModuleFlags | undefined
    /** True for a site whose access log the edge writes (its web server cannot log the query). */
    edgeLogs?: (site: SiteRow) => boolean
    /**
     * The port of the containers' own front (8080). An app site whose live web process's port is
     * known (`sites.web_port`) and whose endpoint is its container's own address on this box
     * (this port; a cluster node's forward is another, and reaches the front only) is served by
     * the edge straight from that process, the front tried only when the port refuses.
     */
    frontPort?: number
    /**
     * In a cluster, the slugs of the sites being switched to another node (domain/cluster/marked-moves-repository.ts):
     * answered "being brought back" (503) without trying their container, which is about to stop.
     */
    moving?: () => ReadonlySet<string>
  }) {
    // The rows (sites), linked domains (names), and each site's modules and logging by plan.
    this.source = d.store.versionOf(['sites', 'names', 'plans'])
  }

  /**
   * The slug of the site a linked domain (or its `www.`) is routed to, or null for a name no site
   * has. Cheap on every request: one map lookup while the store does not change.
   */
  slugForDomain(name: string): string | null {
    this.site('')
    if (!this.linked) {
      this.linked = new Map()
      for (const d of this.d.domains.linked()) {
        const site = this.d.sites.find(d.siteId)
        if (!site || site.status === 'deleted') continue
        this.linked.set(d.name, site.slug)
        this.linked.set(`www.${d.name}`, site.slug)
      }
    }
    return this.linked.get(name) ?? null
  }

  /**
   * The site's target for the edge: synchronous (no promise, no allocation) while the site and
   * its endpoint are known, which is every request but the first after a start or a change; a
   * promise only when the engine must be asked where the container is.
   */
  resolve(slug: string): SiteTarget | null | Promise<SiteTarget | null> {
    const site = this.site(slug)
    if (!site || site.status === 'deleted') return null
    const state = STATE[site.status]
    if (state !== 'serving') return { siteId: site.id, slug, state, ...hstsOf(site) }
    if (this.d.moving?.().has(slug)) return { siteId: site.id, slug, state: 'recovering', ...hstsOf(site) }
    const endpoint = this.d.runner.knownEndpoint(slug)
    if (endpoint !== undefined) return this.target(site, endpoint)
    return this.d.runner.endpointOf(slug).then((found) => this.target(site, found))
  }

  /**
   * Told (by the edge) when a site's upstream changed from `address:port`, at the first request
   * after: an app site's web process moved to another port, the old one is drained.
   */
  onUpstreamMoved(listener: (address: string, port: number) => void): void {
    this.moved = listener
  }

  /** The serving target of a site row and its endpoint, reused while neither changes. */
  private target(site: SiteRow, endpoint: SiteEndpoint | null): SiteTarget {
    // Active but its container is not running: it died or was removed, and is being brought back.
    if (!endpoint) return { siteId: site.id, slug: site.slug, state: 'recovering', ...hstsOf(site) }
    const last = this.targets.get(site.slug)
    if (last && last.site === site && last.endpoint === endpoint) return last.target
    const modules = this.d.modules?.(site)
    const direct = site.webPort !== null && endpoint.port === this.d.frontPort
    const upstream = direct ? { address: endpoint.address, port: site.webPort!, fallbackPort: endpoint.port } : { address: endpoint.address, port: endpoint.port }
    // Straight to the app, the edge writes what the front did: its access log.
    const accessLog = direct || this.d.edgeLogs?.(site)
    const target: SiteTarget = {
      siteId: site.id, slug: site.slug, state: 'serving', upstream,
      ...(modules ? { modules } : {}), ...(accessLog ? { accessLog: true as const } : {}), ...hstsOf(site),
    }
    this.targets.set(site.slug, { site, endpoint, target })
    const was = this.upstreams.get(site.slug)
    if (was && (was.port !== upstream.port || was.address !== upstream.address)) this.moved?.(was.address, was.port)
    if (this.upstreams.size > 10_000) this.upstreams.clear()
    this.upstreams.set(site.slug, { address: upstream.address, port: upstream.port })
    return target
  }

  private site(slug: string): SiteRow | null {
    const version = this.source()
    if (version !== this.version) {
      this.cache.clear()
      this.targets.clear()
      this.linked = null
      this.version = version
    }
    let site = this.cache.get(slug)
    if (site === undefined) {
      site = this.d.sites.findLiveBySlug(slug) ?? null
      if (this.cache.size > 10_000) {
        this.cache.clear()
        this.targets.clear()
      }
      this.cache.set(slug, site)
    }
    return site
  }
}

/** The edge's Strict-Transport-Security value of a site whose owner set `hsts_max_age`; nothing when null (off). */
function hstsOf(site: SiteRow): { hsts?: string } {
  return site.hstsMaxAge === null ? {} : { hsts: `max-age=${site.hstsMaxAge}` }
}
