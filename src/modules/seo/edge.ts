import type { SiteFiles } from '../../drivers/files/site-reader'
import type { SiteTarget } from '../../edge/types'
import type { Logger } from '../../lib/logger'
import type { ModuleEdgeHook, ModuleRequest } from '../edge'
import type { PageAdditions } from './rewrite'
import { listPages, robotsTxt, sitemapXml, type SitePage } from './pages'

const SITEMAP_TTL_MS = 60_000

/**
 * The seo module at the edge: `/sitemap.xml` and `/robots.txt` made from the site's pages unless
 * the site has its own file under public/ (which then goes out as it is), and the head tags a
 * page lacks added as it is served. The sitemap's pages are kept a minute, or until the site's
 * files change.
 */
export class SeoEdge implements ModuleEdgeHook {
  readonly module = 'seo'
  private sitemaps = new Map<string, { at: number; pages: SitePage[] }>()

  constructor(private d: {
    /** The site's files, read-only: `/sitemap.xml` and whether the site has its own. */
    files: SiteFiles
    log: Logger
  }) {}

  /** The site's files changed: its sitemap is made again on the next request. */
  changed(siteId: string): void {
    this.sitemaps.delete(siteId)
  }

  answer({ request, path, origin, site }: ModuleRequest): Promise<Response | undefined> | undefined {
    if ((path !== '/sitemap.xml' && path !== '/robots.txt') || (request.method !== 'GET' && request.method !== 'HEAD')) return undefined
    return this.generated(request, path, origin, site)
  }

  addToPages({ origin, path, site }: ModuleRequest): Partial<PageAdditions> {
    return { seo: { url: `${origin}${path}`, fallbackTitle: site.slug } }
  }

  private async generated(request: Request, path: '/sitemap.xml' | '/robots.txt', origin: string, site: SiteTarget): Promise<Response | undefined> {
    if (await this.hasOwn(site, path)) return undefined
    const body = path === '/robots.txt' ? robotsTxt(origin) : sitemapXml(origin, await this.pages(site))
    return new Response(request.method === 'HEAD' ? null : body, { headers: { 'content-type': path === '/robots.txt' ? 'text/plain; charset=utf-8' : 'application/xml; charset=utf-8', 'cache-control': 'public, max-age=300' } })
  }

  /**
   * Whether the site has its own file for `path` (`/sitemap.xml` or `/robots.txt`) under public/,
   * a regular file reached through no link: it wins. False when the site's files are unavailable.
   */
  private async hasOwn(site: SiteTarget, path: '/sitemap.xml' | '/robots.txt'): Promise<boolean> {
    return this.d.files.read(site.slug, async (files) => (await files.stat(`public${path}`))?.type === 'file').catch(() => false)
  }

  private async pages(site: SiteTarget): Promise<SitePage[]> {
    const cached = this.sitemaps.get(site.siteId)
    if (cached && performance.now() - cached.at < SITEMAP_TTL_MS) return cached.pages
    const pages = await this.d.files.read(site.slug, listPages).catch((err) => {
      this.d.log.warn('seo: the site files could not be listed for its sitemap', { site: site.slug, error: (err as Error).message })
      return [] as SitePage[]
    })
    this.sitemaps.set(site.siteId, { at: performance.now(), pages })
    return pages
  }
}
