import type { SiteEndpoint } from '../../drivers/runtime/types'

/** Where each running site answers, as last seen by provisioning or the reconciler. */
export class SiteEndpoints {
  private bySlug = new Map<string, SiteEndpoint>()

  get(slug: string): SiteEndpoint | undefined {
    return this.bySlug.get(slug)
  }

  set(slug: string, endpoint: SiteEndpoint): void {
    this.bySlug.set(slug, endpoint)
  }

  delete(slug: string): void {
    this.bySlug.delete(slug)
  }
}
