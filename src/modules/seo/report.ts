import type { SiteReader } from '../../drivers/files/site-reader'
import type { SeoReport } from '../../domain/modules'
import { factsOf, headEnd } from './head'
import { listPages, readPage } from './pages'

/** The problems the report finds; its view (domain/modules/views.ts) states `code` as any string. */
type SeoProblemCode = 'missing_title' | 'long_title' | 'missing_description' | 'long_description' | 'missing_h1' | 'several_h1' | 'missing_canonical' | 'missing_og' | 'missing_lang' | 'images_without_alt' | 'no_head'
export type SeoProblem = SeoReport['pages'][number]['problems'][number] & { code: SeoProblemCode }

const MAX_REPORTED = 1000

/**
 * Each HTML page's search-engine problems, as its file has them (GET /sites/{slug}/modules/seo/report/).
 * Problems the seo module covers while it is on (title, description, canonical, OpenGraph) are
 * marked `fixed_at_edge`; the others need the page itself changed.
 */
export async function seoReport(files: SiteReader, seoOn: boolean): Promise<SeoReport> {
  const all = await listPages(files)
  const pages: SeoReport['pages'] = []
  for (const page of all.slice(0, MAX_REPORTED)) {
    const html = (await readPage(files, page)) ?? ''
    const problems: SeoProblem[] = []
    const add = (code: SeoProblem['code'], message: string, edge = false) => problems.push({ code, message, fixed_at_edge: edge && seoOn })
    const end = headEnd(html)
    if (end === -1) add('no_head', 'The page has no <head>; nothing can be added to it at the edge.')
    const facts = factsOf(end === -1 ? '' : html.slice(0, end), end === -1 ? html : html.slice(end))
    if (!facts.title) add('missing_title', 'No <title>; search results show the first heading or the address instead.', end !== -1)
    else if (facts.title.length > 60) add('long_title', `The title has ${facts.title.length} characters; search results cut it after about 60.`)
    if (facts.description === null) add('missing_description', 'No meta description; search results make one up from the page.', end !== -1)
    else if (facts.description.length > 160) add('long_description', `The description has ${facts.description.length} characters; search results cut it after about 160.`)
    const h1s = (html.match(/<h1\b/gi) ?? []).length
    if (h1s === 0) add('missing_h1', 'No <h1> heading.')
    else if (h1s > 1) add('several_h1', `${h1s} <h1> headings; one says what the page is about.`)
    if (!facts.canonical) add('missing_canonical', 'No canonical link.', end !== -1)
    if (!facts.ogTitle || !facts.ogUrl) add('missing_og', 'No OpenGraph tags; shared links show no title or preview.', end !== -1)
    if (!/<html\b[^>]*\blang\s*=/i.test(html)) add('missing_lang', 'The <html> element has no lang attribute.')
    const images = html.match(/<img\b[^>]*>/gi) ?? []
    const noAlt = images.filter((tag) => !/\balt\s*=/i.test(tag)).length
    if (noAlt > 0) add('images_without_alt', `${noAlt} image${noAlt === 1 ? '' : 's'} without alt text.`)
    pages.push({ url: page.url, file: page.file, title: facts.title ?? facts.firstHeading, problems })
  }
  return { pages_checked: pages.length, pages_with_problems: pages.filter((p) => p.problems.length > 0).length, truncated: all.length > MAX_REPORTED, pages }
}
