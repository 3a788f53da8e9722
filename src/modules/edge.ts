import type { SiteFiles } from '../drivers/files/site-reader'
import type { SiteModuleFlags, SiteTarget } from '../edge/types'
import type { Logger } from '../lib/logger'
import type { ChatbotService } from './chatbot/service'
import { CHATBOT_ASK_PATH, CHATBOT_SCRIPT_PATH, WIDGET_JS, WIDGET_TAG } from './chatbot/widget'
import { addToPage, isPage } from './page-response'
import { listPages, robotsTxt, sitemapXml, type SitePage } from './seo/pages'
import type { TranslationService } from './translation/service'
import { TRANSLATION_LANGUAGES } from './translation/service'

/** Sends a request on to the site's container (the edge's own forwarding, metrics included). */
export type Forward = (request: Request) => Promise<Response>

// nosniff: an answer is JSON holding text (the model's included), never a page a browser could render.
const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }
const SITEMAP_TTL_MS = 60_000
const LANG_PREFIX = new RegExp(`^/(${TRANSLATION_LANGUAGES.join('|')})(/.*)$`)

/**
 * What the AI modules do to a site's traffic at the edge (design.md, AI modules). Only sites
 * with a module on come here; the others keep the edge's plain path.
 * - seo: `/sitemap.xml` and `/robots.txt` made from the site's pages unless the site has its own
 *   file under public/ (which then goes out as it is); missing head tags on pages.
 * - chatbot: its script and ask endpoint on the site's own host; the script's tag on pages.
 * - translation: `/{lang}/path` is the page at `/path`, translated (cached per page version).
 */
export class SiteModulesEdge {
  private sitemaps = new Map<string, { at: number; pages: SitePage[] }>()

  constructor(private d: {
    chatbot: ChatbotService
    translation: TranslationService | null
    /** The site's files, read-only: `/sitemap.xml` and whether the site has its own. */
    files: SiteFiles
    log: Logger
  }) {}

  /** The site's files changed: its sitemap is made again on the next request. */
  changed(siteId: string): void {
    this.sitemaps.delete(siteId)
  }

  async handle(request: Request, site: SiteTarget, modules: SiteModuleFlags, visitor: string, forward: Forward): Promise<Response> {
    // String work rather than new URL(): this runs on every request of a site with a module on.
    const raw = request.url
    const scheme = raw.indexOf('://')
    const slash = raw.indexOf('/', scheme + 3)
    const query = slash === -1 ? -1 : raw.indexOf('?', slash)
    const path = slash === -1 ? '/' : query === -1 ? raw.slice(slash) : raw.slice(slash, query)
    const origin = `${raw.slice(0, scheme)}://${request.headers.get('host') ?? raw.slice(scheme + 3, slash === -1 ? undefined : slash)}`
    if (modules.chatbot && path === CHATBOT_SCRIPT_PATH && (request.method === 'GET' || request.method === 'HEAD')) {
      return new Response(request.method === 'HEAD' ? null : WIDGET_JS, { headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' } })
    }
    if (modules.chatbot && path === CHATBOT_ASK_PATH) return this.ask(request, site, visitor)
    if (modules.translation && this.d.translation && request.method === 'GET') {
      const m = LANG_PREFIX.exec(path)
      // The page at its path: the query string is not sent, so that one page is one translation.
      if (m) {
        return this.d.translation.page(site, m[1]!, m[2]!, visitor, (p) => {
          const url = new URL(raw)
          url.pathname = p
          url.search = ''
          return forward(new Request(url, { headers: request.headers }))
        })
      }
    }
    if (modules.seo && (path === '/sitemap.xml' || path === '/robots.txt') && (request.method === 'GET' || request.method === 'HEAD') && !(await this.hasOwn(site, path))) {
      const body = path === '/robots.txt' ? robotsTxt(origin) : sitemapXml(origin, await this.pages(site))
      return new Response(request.method === 'HEAD' ? null : body, { headers: { 'content-type': path === '/robots.txt' ? 'text/plain; charset=utf-8' : 'application/xml; charset=utf-8', 'cache-control': 'public, max-age=300' } })
    }
    const response = await forward(request)
    if ((modules.seo || modules.chatbot) && request.method === 'GET' && isPage(response)) {
      return addToPage(response, {
        seo: modules.seo ? { url: `${origin}${path}`, fallbackTitle: site.slug } : null,
        widget: modules.chatbot ? WIDGET_TAG : null,
      }, site.siteId)
    }
    return response
  }

  private async ask(request: Request, site: SiteTarget, visitor: string): Promise<Response> {
    if (request.method !== 'POST') return envelopeError(405, 'METHOD_NOT_ALLOWED', 'POST a JSON body {"question": "..."}.', null, { allow: 'POST' })
    let question: unknown
    try {
      const text = await request.text()
      if (text.length > 4096) return envelopeError(413, 'PAYLOAD_TOO_LARGE', 'The question is too long; ask in at most 500 characters.', 'question')
      question = (JSON.parse(text) as { question?: unknown }).question
    } catch {
      return envelopeError(400, 'VALIDATION_ERROR', 'Send a JSON body {"question": "..."}.', null)
    }
    if (typeof question !== 'string') return envelopeError(422, 'VALIDATION_ERROR', '"question" must be a string of 1 to 500 characters.', 'question')
    const answer = await this.d.chatbot.ask(site, question, visitor)
    if ('refused' in answer) {
      return answer.refused === 'too_many'
        ? envelopeError(429, 'RATE_LIMITED', answer.message, null, { 'retry-after': String(answer.retryAfter ?? 60) })
        : envelopeError(422, 'VALIDATION_ERROR', answer.message, 'question')
    }
    return new Response(JSON.stringify({ ok: true, data: answer, meta: meta() }), { headers: JSON_HEADERS })
  }

  /**
   * Whether the site has its own file for `path` (`/sitemap.xml` or `/robots.txt`) under public/,
   * a regular file reached through no link: it wins. False when the site's files are unavailable.
   */
  private async hasOwn(site: SiteTarget, path: '/sitemap.xml' | '/robots.txt'): Promise<boolean> {
    return this.d.files.read(site.slug, (files) => files.stat(`public${path}`)?.type === 'file').catch(() => false)
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

const meta = () => ({ request_id: crypto.randomUUID(), timestamp: new Date().toISOString() })

/** The API's error envelope, for the module endpoints on a site's host. */
function envelopeError(status: number, code: string, message: string, param: string | null, headers: Record<string, string> = {}): Response {
  const m = meta()
  return new Response(JSON.stringify({ ok: false, error: { code, message, param }, meta: m }), { status, headers: { ...JSON_HEADERS, 'x-request-id': m.request_id, ...headers } })
}
