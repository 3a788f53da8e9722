import type { SiteReader } from '../../drivers/files/site-reader'

/** One HTML page of a site, as its files say. */
export interface SitePage {
  /** The path visitors use: `public/index.html` is `/`, `public/a/index.html` is `/a/`, `public/b.html` is `/b.html`. */
  url: string
  /** Under the site's home: `public/...`. */
  file: string
  modifiedAt: number
  size: number
}

const HTML = /\.html?$/i
/** At most this many pages are listed (a sitemap file holds 50,000 URLs). */
export const MAX_PAGES = 50_000
const MAX_DEPTH = 32

/** The URL path of a page file under `public/`. */
export function urlOf(relative: string): string {
  const path = `/${relative.split('/').map(encodeURIComponent).join('/')}`
  return path.endsWith('/index.html') ? path.slice(0, -'index.html'.length) : path.endsWith('/index.htm') ? path.slice(0, -'index.htm'.length) : path
}

/**
 * The HTML pages under the site's `public/` folder, sorted by URL. Symbolic links are never
 * followed (a link planted in a site could point anywhere on the host; the reader refuses them
 * anywhere in a path, so a folder swapped for one mid-walk is simply not listed), hidden files
 * and folders (`.git`) are skipped, and the walk stops at MAX_PAGES pages and MAX_DEPTH folders deep.
 */
export async function listPages(files: SiteReader): Promise<SitePage[]> {
  const pages: SitePage[] = []
  const walk = async (rel: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH || pages.length >= MAX_PAGES) return
    const entries = await files.list(rel ? `public/${rel}` : 'public')
    for (const entry of entries ?? []) {
      if (pages.length >= MAX_PAGES) return
      if (entry.name.startsWith('.')) continue
      const relative = rel ? `${rel}/${entry.name}` : entry.name
      if (entry.type === 'dir') await walk(relative, depth + 1)
      else if (entry.type === 'file' && HTML.test(entry.name)) pages.push({ url: urlOf(relative), file: `public/${relative}`, modifiedAt: entry.mtimeMs, size: entry.size })
    }
  }
  await walk('', 0)
  return pages.sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0))
}

/** A page's first `limit` bytes as text, or null when it is no longer a regular file (never read through a link). */
export async function readPage(files: SiteReader, page: SitePage, limit = 512 * 1024): Promise<string | null> {
  const content = await files.read(page.file, limit)
  return content === null ? null : content.data.toString('utf8')
}

const xml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!)

/** The sitemap (sitemaps.org 0.9) of `pages` at `origin`. */
export function sitemapXml(origin: string, pages: SitePage[]): string {
  const urls = pages.map((p) => `  <url><loc>${xml(origin + p.url)}</loc><lastmod>${new Date(p.modifiedAt).toISOString().slice(0, 10)}</lastmod></url>`)
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n${urls.join('\n')}${urls.length ? '\n' : ''}</urlset>\n`
}

/** robots.txt allowing everything and naming the sitemap. */
export const robotsTxt = (origin: string) => `User-agent: *\nAllow: /\n\nSitemap: ${origin}/sitemap.xml\n`
