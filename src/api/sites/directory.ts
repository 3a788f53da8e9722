import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { SiteEndpoints } from './endpoints'
import type { SitesRepository } from './repository'

export type SiteState = 'serving' | 'stopped' | 'provisioning' | 'pending_deletion' | 'failed'

export interface SiteTarget {
  siteId: string
  slug: string
  state: SiteState
  upstream?: { address: string; port: number }
}

const STATE: Record<string, SiteState> = {
  active: 'serving',
  provisioning: 'provisioning',
  suspended: 'stopped',
  pending_deletion: 'pending_deletion',
  failed: 'failed',
}

/**
 * Answers the edge proxy's question, "which container serves this slug?", on every proxied
 * request: from memory, reloaded when the store's version moves; a running site whose endpoint
 * is not known yet (just after a restart) is looked up in the engine once.
 */
export class SiteDirectory {
  private cache = new Map<string, SiteRow | null>()
  private version = -1

  constructor(private store: Store, private repo: SitesRepository, private endpoints: SiteEndpoints, private runtime: ContainerRuntime) {}

  async resolve(slug: string): Promise<SiteTarget | null> {
    const site = this.site(slug)
    if (!site) return null
    const state = STATE[site.status] ?? 'failed'
    if (state !== 'serving') return { siteId: site.id, slug, state }
    let endpoint = this.endpoints.get(slug)
    if (!endpoint) {
      const found = await this.runtime.inspectSite(slug).catch(() => null)
      if (found?.running && found.endpoint) {
        endpoint = found.endpoint
        this.endpoints.set(slug, endpoint)
      }
    }
    if (!endpoint) return { siteId: site.id, slug, state: 'stopped' }
    return { siteId: site.id, slug, state, upstream: { address: endpoint.address, port: endpoint.port } }
  }

  private site(slug: string): SiteRow | null {
    const version = this.store.version()
    if (version !== this.version) {
      this.cache.clear()
      this.version = version
    }
    let site = this.cache.get(slug)
    if (site === undefined) {
      site = this.repo.findLiveBySlug(slug) ?? null
      if (this.cache.size > 10_000) this.cache.clear()
      this.cache.set(slug, site)
    }
    return site
  }
}
