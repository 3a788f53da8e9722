import { createHash } from 'node:crypto'
import type { AiProvider } from '../../drivers/ai/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteTarget } from '../../edge/types'
import type { Store } from '../../store/store'
import { DomainError, OverBudgetError, upstreamFailed } from '../../domain/errors'
import { askModel, withoutFence, type AiBudget } from '../ai-calls'
import { isPage } from '../page-response'
import { VisitorLimiter } from '../visitor-limit'
import { TranslationsRepository } from './repository'
import { pageTexts, type PageTexts } from './segments'

/** The languages `/{lang}/...` serves. */
export const TRANSLATION_LANGUAGES = ['en', 'fr', 'es', 'de', 'it', 'pt', 'nl'] as const
const NAMES: Record<string, string> = { en: 'English', fr: 'French', es: 'Spanish', de: 'German', it: 'Italian', pt: 'Portuguese', nl: 'Dutch' }
/** Pages whose texts (as sent to the model) are larger than this are served untranslated: a model's context is finite. */
export const MAX_TRANSLATED_BYTES = 48 * 1024
/** Pages larger than this are served untranslated without being looked at. */
export const MAX_PAGE_BYTES = 512 * 1024
/** Pages one visitor may have translated (model calls, not cached pages) on one site per minute. */
export const TRANSLATIONS_PER_MINUTE = 10

type Outcome = { html: string } | { error: Response }

/**
 * The translation module (design.md, AI modules): `/{lang}/path` serves the site's page at
 * `/path` (its query string is not sent: one page, one translation) translated by the AI
 * provider. Only the page's texts go to the model, as a JSON list; its answers are put back
 * escaped into the page's own markup (segments.ts), so no answer can add a tag, an attribute or
 * a URL. Cached per page, language and version of the source page (a SHA-256 of its bytes): a
 * changed page is translated again, an unchanged one is served from the cache. Requests for a
 * page already being translated wait for that one call; other model calls count against the
 * visitor's TRANSLATIONS_PER_MINUTE on the site and the site's AI allowance (429 with
 * Retry-After for either). Provider failures answer the API's 502/504 envelope.
 */
export class TranslationService {
  private visitors = new VisitorLimiter(TRANSLATIONS_PER_MINUTE)
  private inFlight = new Map<string, Promise<Outcome>>()

  private cache: TranslationsRepository

  constructor(private d: { store: Store; clock: Clock; provider: AiProvider; budget: AiBudget; log: Logger }) {
    this.cache = new TranslationsRepository(d.store)
  }

  async page(site: SiteTarget, lang: string, path: string, visitor: string, fetchOriginal: (path: string) => Promise<Response>): Promise<Response> {
    const source = await fetchOriginal(path)
    if (!isPage(source) || source.headers.get('content-encoding')) return source
    const html = await source.text()
    if (Buffer.byteLength(html) > MAX_PAGE_BYTES) return pageResponse(html, source, lang, 'too-large')
    const hash = createHash('sha256').update(html).digest('hex')
    const cached = this.cache.find(site.siteId, path, lang)
    if (cached && cached.sourceHash === hash) return pageResponse(cached.html, source, lang, 'hit')
    const key = `${site.siteId}\n${path}\n${lang}\n${hash}`
    let running = this.inFlight.get(key)
    if (!running) {
      const page = pageTexts(html)
      const sent = JSON.stringify(page.texts)
      if (Buffer.byteLength(sent) > MAX_TRANSLATED_BYTES) return pageResponse(html, source, lang, 'too-large')
      const wait = this.visitors.wait(site.siteId, visitor)
      if (wait > 0) return errorResponse(429, 'RATE_LIMITED', `Too many pages translated for you on this site; try again in ${wait} seconds.`, wait)
      running = this.translate(site, lang, path, hash, page, sent).finally(() => this.inFlight.delete(key))
      this.inFlight.set(key, running)
    }
    const outcome = await running
    return 'error' in outcome ? outcome.error.clone() : pageResponse(outcome.html, source, lang, 'miss')
  }

  /** One model call for the page's texts, the page rebuilt with its answers and cached. */
  private async translate(site: SiteTarget, lang: string, path: string, hash: string, page: PageTexts, sent: string): Promise<Outcome> {
    let translated: string
    try {
      translated = page.rebuild(page.texts.length === 0 ? [] : await this.askFor(site, lang, page.texts.length, sent), lang)
    } catch (err) {
      if (!(err instanceof DomainError)) throw err
      this.d.log.warn('translation failed', { site: site.slug, lang, path, error: err.message })
      const retryAfter = err instanceof OverBudgetError ? err.retryAfterSeconds : undefined
      const [status, code] = err.kind === 'upstream_timeout' ? [504, 'UPSTREAM_TIMEOUT'] : err.kind === 'over_budget' ? [429, 'RATE_LIMITED'] : [502, 'UPSTREAM_ERROR']
      return { error: errorResponse(status, code, `The page could not be translated: ${err.message}`, retryAfter) }
    }
    const now = this.d.clock.now()
    this.cache.save({ siteId: site.siteId, path, lang, sourceHash: hash, html: translated, createdAt: now })
    return { html: translated }
  }

  /** The model's translations of `count` texts sent as the JSON list `sent`, in order. */
  private async askFor(site: SiteTarget, lang: string, count: number, sent: string): Promise<unknown[]> {
    const result = await askModel(this.d.provider, this.d.budget, site.siteId, {
      temperature: 0,
      // The answer is about as long as what is sent: at most one token per two bytes of it, and some room.
      maxTokens: Math.ceil(Buffer.byteLength(sent) / 2) + 256,
      messages: [
        { role: 'system', content: `Translate texts of a web page into ${NAMES[lang]}. The user sends a JSON array of strings; answer with a JSON array of exactly as many strings, each the translation of the string at the same position, and nothing else. The strings are plain text: keep character references such as &amp; as they are, and translate any markup-like text as words.` },
        { role: 'user', content: sent },
      ],
    })
    let answer: unknown
    try {
      answer = JSON.parse(withoutFence(result.text))
    } catch {
      answer = null
    }
    if (!Array.isArray(answer) || answer.length !== count) {
      throw upstreamFailed(`The AI provider did not answer with the ${count} translated texts asked for (a JSON array); try again.`)
    }
    return answer
  }

  /** The module was turned off: its cached pages go. */
  remove(siteId: string): void {
    this.cache.removeSite(siteId)
  }
}

function pageResponse(html: string, source: Response, lang: string, cache: 'hit' | 'miss' | 'too-large'): Response {
  const headers = new Headers(source.headers)
  headers.delete('content-length')
  headers.delete('etag')
  headers.set('content-language', lang)
  headers.set('x-berth-translation', cache)
  return new Response(html, { status: 200, headers })
}

/** The API's error envelope, with Retry-After when there is a time to wait. */
function errorResponse(status: number, code: string, message: string, retryAfter?: number): Response {
  const requestId = crypto.randomUUID()
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'x-request-id': requestId }
  if (retryAfter !== undefined) headers['retry-after'] = String(retryAfter)
  return new Response(JSON.stringify({ ok: false, error: { code, message, param: null }, meta: { request_id: requestId, timestamp: new Date().toISOString() } }), { status, headers })
}
