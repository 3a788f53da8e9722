import { and, eq } from 'drizzle-orm'
import { translations } from '../../store/schema'
import type { Store } from '../../store/store'

/** A translated page as cached: the source page's SHA-256 it was made from, and the page. */
export interface CachedTranslation {
  sourceHash: string
  html: string
}

/** The only code that touches `translations`: translated pages, one per site, path and language. */
export class TranslationsRepository {
  constructor(private store: Store) {}

  find(siteId: string, path: string, lang: string): CachedTranslation | undefined {
    return this.store.db.select({ sourceHash: translations.sourceHash, html: translations.html }).from(translations)
      .where(and(eq(translations.siteId, siteId), eq(translations.path, path), eq(translations.lang, lang))).get()
  }

  /** Keeps `html` as the page's translation, replacing the one before. */
  save(t: { siteId: string; path: string; lang: string; sourceHash: string; html: string; at: number }): void {
    this.store.write(() => {
      this.store.db.insert(translations).values({ siteId: t.siteId, path: t.path, lang: t.lang, sourceHash: t.sourceHash, html: t.html, createdAt: t.at })
        .onConflictDoUpdate({ target: [translations.siteId, translations.path, translations.lang], set: { sourceHash: t.sourceHash, html: t.html, createdAt: t.at } }).run()
    })
  }

  /** Every cached page of the site. */
  removeAll(siteId: string): void {
    this.store.write(() => this.store.db.delete(translations).where(eq(translations.siteId, siteId)).run())
  }
}
