import { join } from 'node:path'
import type { AiProvider } from '../../drivers/ai/types'
import type { SiteFiles } from '../../drivers/files/site-reader'
import type { Logger } from '../../lib/logger'
import { DomainError } from '../../domain/errors'
import { askModel, type AiBudget } from '../ai-calls'
import { VisitorLimiter } from '../visitor-limit'
import { SiteIndex, type SearchHit } from './site-index'

/** Questions one visitor may ask one site's chatbot per minute. */
export const QUESTIONS_PER_MINUTE = 10
/** The index's share of the site's disk: this fraction of the plan's `disk_gb`. */
export const INDEX_DISK_SHARE = 0.05
const MAX_QUESTION = 500
/** A site's index is looked at again this often, for changes made over SSH. */
const RESYNC_MS = 60_000

export interface ChatbotSite {
  siteId: string
  slug: string
}

export interface ChatbotAnswer {
  answer: string
  sources: { url: string; title: string }[]
  /** `search`: the best passage of the site itself; `model`: written by the AI provider from the passages. */
  mode: 'search' | 'model'
}

/**
 * The chatbot module (design.md, AI modules): a full-text index of each site's pages (its own
 * SQLite file in the data folder, within a share of the site's disk), kept current when the
 * files change through the API, a deploy or a restore, and looked at again every minute for
 * changes made over SSH. Answers come from the best passages, always with the page that said it;
 * with an AI provider, the model writes the answer from those passages only.
 */
export class ChatbotService {
  private indexes = new Map<string, SiteIndex>()
  private dirty = new Set<string>()
  private syncing = new Map<string, Promise<void>>()
  private syncedAt = new Map<string, number>()
  private asked = new VisitorLimiter(QUESTIONS_PER_MINUTE)

  constructor(private d: {
    dir: string
    /** The sites' files, read-only: the index reads public/ through it. */
    files: SiteFiles
    /** The site's plan's disk share, bytes. */
    diskBytes(siteId: string): number
    provider: AiProvider | null
    budget: AiBudget
    log: Logger
  }) {}

  private fileOf(siteId: string): string {
    return join(this.d.dir, `${siteId}.db`)
  }

  private index(siteId: string): SiteIndex {
    let index = this.indexes.get(siteId)
    if (!index) {
      index = SiteIndex.open(this.fileOf(siteId), { maxBytes: Math.max(1024 * 1024, Math.floor(this.d.diskBytes(siteId) * INDEX_DISK_SHARE)) })
      this.indexes.set(siteId, index)
      this.dirty.add(siteId)
    }
    return index
  }

  /** The site's files changed: the next question (or the next pass) indexes them again. */
  changed(siteId: string): void {
    if (this.indexes.has(siteId)) this.dirty.add(siteId)
  }

  /** Brings the site's index up to date with its files (one sync at a time per site). */
  async sync(site: ChatbotSite): Promise<void> {
    const running = this.syncing.get(site.siteId)
    if (running) return running
    const index = this.index(site.siteId)
    const run = (async () => {
      this.dirty.delete(site.siteId)
      const result = await this.d.files.read(site.slug, (files) => index.sync(files))
      this.syncedAt.set(site.siteId, performance.now())
      if (result.added || result.updated || result.removed) this.d.log.info('chatbot index updated', { site: site.slug, ...result })
      if (result.skipped) this.d.log.warn('chatbot index full: pages left out', { site: site.slug, skipped: result.skipped, bytes: result.bytes })
    })().finally(() => this.syncing.delete(site.siteId))
    this.syncing.set(site.siteId, run)
    return run
  }

  /** Rebuilds what is stale: sites whose files changed, and any not looked at for a minute. */
  async maintain(sites: ChatbotSite[]): Promise<void> {
    const now = performance.now()
    for (const site of sites) {
      if (this.dirty.has(site.siteId) || !this.indexes.has(site.siteId) || now - (this.syncedAt.get(site.siteId) ?? 0) > RESYNC_MS) {
        await this.sync(site).catch((err) => this.d.log.warn('chatbot index sync failed', { site: site.slug, error: (err as Error).message }))
      }
    }
  }

  /** The module was turned off: its index goes (a module that is off leaves no trace). */
  remove(siteId: string): void {
    const index = this.indexes.get(siteId) ?? SiteIndex.open(this.fileOf(siteId), { maxBytes: 1024 * 1024 })
    index.destroy()
    this.indexes.delete(siteId)
    this.dirty.delete(siteId)
    this.syncedAt.delete(siteId)
  }

  /** Search only: the passages for a question, best first (the benchmark's and the answer's first step). */
  search(site: ChatbotSite, question: string, limit = 3): SearchHit[] {
    return this.index(site.siteId).search(question, limit)
  }

  /**
   * A visitor's question. `null` with a reason when it cannot be asked now: too long or empty
   * (400), too many from this visitor (429, with the seconds to wait).
   */
  async ask(site: ChatbotSite, question: string, visitor: string): Promise<ChatbotAnswer | { refused: 'bad_question' | 'too_many'; retryAfter?: number; message: string }> {
    const q = question.trim()
    if (!q || q.length > MAX_QUESTION) return { refused: 'bad_question', message: `Ask a question of 1 to ${MAX_QUESTION} characters.` }
    const wait = this.asked.wait(site.siteId, visitor)
    if (wait > 0) return { refused: 'too_many', retryAfter: wait, message: `Too many questions; ask again in ${wait} seconds.` }
    if (this.dirty.has(site.siteId) || !this.indexes.has(site.siteId)) await this.sync(site)
    const hits = this.index(site.siteId).search(q, 3)
    if (hits.length === 0) return { answer: "I could not find anything about that on this site.", sources: [], mode: 'search' }
    const sources = hits.map((h) => ({ url: h.url, title: h.title }))
    if (this.d.provider) {
      try {
        const context = hits.map((h, i) => `[${i + 1}] ${h.title} (${h.url})\n${h.passage}`).join('\n\n')
        const result = await askModel(this.d.provider, this.d.budget, site.siteId, {
          maxTokens: 300,
          temperature: 0.2,
          messages: [
            { role: 'system', content: 'You answer visitors of a website using only the numbered passages from its pages. Answer in the language of the question, in at most three sentences, and end with the page you used as "Source: <url>". If the passages do not answer the question, say so.' },
            { role: 'user', content: `Passages:\n${context}\n\nQuestion: ${q}` },
          ],
        })
        const answer = result.text.trim()
        // The page is always cited, whatever the model wrote.
        const cited = hits.some((h) => answer.includes(h.url)) ? answer : `${answer}\n\nSource: ${hits[0]!.url}`
        return { answer: cited, sources, mode: 'model' }
      } catch (err) {
        // The site's own words still answer when the model cannot (down, slow, budget spent).
        if (!(err instanceof DomainError)) throw err
        this.d.log.warn('chatbot answered by search: the model call failed', { site: site.slug, error: err.message })
      }
    }
    const best = hits[0]!
    return { answer: `${best.snippet} (from "${best.title}": ${best.url})`, sources, mode: 'search' }
  }

  close(): void {
    for (const index of this.indexes.values()) index.close()
    this.indexes.clear()
  }
}
