import { createHash } from 'node:crypto'
import { and, eq } from 'drizzle-orm'
import type { AiProvider } from '../../drivers/ai/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteTarget } from '../../edge/types'
import { translations } from '../../store/schema'
import type { Store } from '../../store/store'
import { DomainError } from '../../domain/errors'
import { askModel, withoutFence, type AiBudget } from '../ai-calls'
import { isPage } from '../page-response'

/** The languages `/{lang}/...` serves. */
export const TRANSLATION_LANGUAGES = ['en', 'fr', 'es', 'de', 'it', 'pt', 'nl'] as const
const NAMES: Record<string, string> = { en: 'English', fr: 'French', es: 'Spanish', de: 'German', it: 'Italian', pt: 'Portuguese', nl: 'Dutch' }
/** Pages larger than this are served untranslated (a model's context is finite). */
export const MAX_TRANSLATED_BYTES = 48 * 1024

/**
 * The translation module (design.md, AI modules): `/{lang}/path` serves the site's page at
 * `/path` translated by the AI provider, cached per page, language and version of the source
 * page (a SHA-256 of its bytes): a changed page is translated again, an unchanged one is served
 * from the cache without a model call. Provider failures answer the API's 502/504 envelope.
 */
export class TranslationService {
  constructor(private d: { store: Store; clock: Clock; provider: AiProvider; budget: AiBudget; log: Logger }) {}

  async page(site: SiteTarget, lang: string, path: string, search: string, origin: string, fetchOriginal: (path: string) => Promise<Response>): Promise<Response> {
    const source = await fetchOriginal(path)
    if (!isPage(source) || source.headers.get('content-encoding')) return source
    const html = await source.text()
    if (Buffer.byteLength(html) > MAX_TRANSLATED_BYTES) return pageResponse(html, source, lang, 'too-large')
    const hash = createHash('sha256').update(html).digest('hex')
    const key = `${path}${search}`
    const cached = this.d.store.db.select().from(translations)
      .where(and(eq(translations.siteId, site.siteId), eq(translations.path, key), eq(translations.lang, lang))).get()
    if (cached && cached.sourceHash === hash) return pageResponse(cached.html, source, lang, 'hit')
    let translated: string
    try {
      const result = await askModel(this.d.provider, this.d.budget, site.siteId, {
        temperature: 0,
        messages: [
          { role: 'system', content: `Translate the human-readable text of the HTML page the user sends into ${NAMES[lang]}. Keep every tag, attribute, URL, script and style exactly as it is; translate only text and the title, alt and content of meta description. Set the html element's lang attribute to "${lang}". Answer with the whole translated HTML document and nothing else.` },
          { role: 'user', content: html },
        ],
      })
      translated = withoutFence(result.text)
    } catch (err) {
      if (!(err instanceof DomainError)) throw err
      const status = err.kind === 'upstream_timeout' ? 504 : err.kind === 'over_budget' ? 429 : 502
      const code = err.kind === 'upstream_timeout' ? 'UPSTREAM_TIMEOUT' : err.kind === 'over_budget' ? 'RATE_LIMITED' : 'UPSTREAM_ERROR'
      this.d.log.warn('translation failed', { site: site.slug, lang, path, error: err.message })
      return new Response(JSON.stringify({ ok: false, error: { code, message: `The page could not be translated: ${err.message}`, param: null }, meta: { request_id: crypto.randomUUID(), timestamp: new Date().toISOString() } }), {
        status, headers: { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' },
      })
    }
    this.d.store.write(() => {
      this.d.store.db.insert(translations).values({ siteId: site.siteId, path: key, lang, sourceHash: hash, html: translated, createdAt: this.d.clock.now() })
        .onConflictDoUpdate({ target: [translations.siteId, translations.path, translations.lang], set: { sourceHash: hash, html: translated, createdAt: this.d.clock.now() } }).run()
    })
    return pageResponse(translated, source, lang, 'miss')
  }

  /** The module was turned off: its cached pages go. */
  remove(siteId: string): void {
    this.d.store.write(() => this.d.store.db.delete(translations).where(eq(translations.siteId, siteId)).run())
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

/** A model that wrapped its answer in a Markdown code fence: the fence goes. */
