import { and, eq } from 'drizzle-orm'
import { translations } from '../../store/schema'
import type { Store } from '../../store/store'

export type TranslationRow = typeof translations.$inferSelect

/** The translation module's cache (`translations`): one page per site, path and language. */
export class TranslationsRepository {
  constructor(private store: Store) {}

  find(siteId: string, path: string, lang: string): TranslationRow | undefined {
    return this.store.db.select().from(translations)
      .where(and(eq(translations.siteId, siteId), eq(translations.path, path), eq(translations.lang, lang))).get()
  }

  /** Keeps the translation of the page (replacing the one of an older version). */
  save(row: TranslationRow): void {
    this.store.write(() => {
      this.store.db.insert(translations).values(row)
        .onConflictDoUpdate({ target: [translations.siteId, translations.path, translations.lang], set: { sourceHash: row.sourceHash, html: row.html, createdAt: row.createdAt } }).run()
    })
  }

  /** Drops every cached page of the site. */
  removeSite(siteId: string): void {
    this.store.write(() => this.store.db.delete(translations).where(eq(translations.siteId, siteId)).run())
  }
}
