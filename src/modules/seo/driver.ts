import type { SeoModuleDriver } from '../../domain/modules'
import type { SiteFiles } from '../../drivers/files/site-reader'
import { seoReport } from './report'

/**
 * The seo module for the modules service. Turning it on or off makes the site's sitemap again
 * (the edge serves one only while it is on); its report reads the site's files.
 */
export function seoDriver(d: {
  /** The seo edge hook's cached sitemaps. */
  sitemap: { changed(siteId: string): void }
  /** The site's files, read-only (the report). */
  files: SiteFiles
}): SeoModuleDriver {
  return {
    name: 'seo',
    description: 'A sitemap.xml and robots.txt made from the pages, missing titles, descriptions, canonical and OpenGraph tags added as pages are served, and a report of what each page lacks.',
    enable: async (site) => d.sitemap.changed(site.siteId),
    disable: async (site) => d.sitemap.changed(site.siteId),
    report: (site, seoOn) => d.files.read(site.slug, (files) => seoReport(files, seoOn)),
  }
}
