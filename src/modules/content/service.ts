import type { AiProvider } from '../../drivers/ai/types'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { FilesService } from '../../domain/files'
import type { ContentBrief, GeneratedPage } from '../../domain/modules'
import { conflict, DomainError, invalid, op, say } from '../../domain/errors'
import { askModel, withoutFence, type AiBudget } from '../ai-calls'
import { urlOf } from '../seo/pages'
import { refusedContent } from './page-check'

/**
 * The content module (design.md, AI modules): a new page from a brief, written by the AI
 * provider and saved into the site's `public/` folder through the files layer (its path rules,
 * limits and ownership), never over an existing file unless `overwrite` is true. The model's
 * page is never trusted: one with anything that could run code or send the visitor elsewhere
 * (page-check.ts: `<script>`, `on*` attributes, `javascript:` URLs ...) is refused, not written.
 */
export class ContentService {
  constructor(private d: { provider: AiProvider | null; budget: AiBudget; files: Pick<FilesService, 'read' | 'write'>; siteUrl: (slug: string) => string; log: Logger }) {}

  async generate(site: SiteRow, input: ContentBrief): Promise<GeneratedPage> {
    const path = input.path.replace(/^\/+/, '')
    if (!/^public\/.+\.html?$/i.test(path)) throw invalid('path', `The page goes under public/ and ends in .html, e.g. public/about.html (got '${input.path}').`)
    if (!this.d.provider) throw conflict('The content module needs an AI provider, and none is configured on this server (ai.base_url).')
    const exists = await this.d.files.read(site, path).then(() => true, (err) => {
      if (err instanceof DomainError && err.kind === 'not_found') return false
      throw err
    })
    if (exists && !input.overwrite) throw conflict(say`${path} exists; send overwrite: true to replace it, or choose another path (${op('listFiles', { tenant_slug: site.slug })}).`, 'path')
    const result = await askModel(this.d.provider, this.d.budget, site.id, {
      temperature: 0.7,
      maxTokens: 2000,
      messages: [
        { role: 'system', content: `You write web pages. Answer with one complete, valid HTML5 document and nothing else: <!doctype html>, <html lang="${input.language ?? 'en'}">, a <head> with <meta charset="utf-8">, a <title> and a meta description, and a <body> with one <h1>. Plain HTML only: no scripts, event-handler attributes, forms, iframes, objects or SVG; CSS only in one <style> element; links and images with http(s) or relative URLs.` },
        { role: 'user', content: input.brief },
      ],
    })
    const html = withoutFence(result.text)
    if (!/<html[\s>]/i.test(html) || !/<\/html\s*>/i.test(html)) {
      throw new DomainError('upstream_failed', 'The AI provider did not answer with an HTML page; try again, or make the brief more specific. Nothing was written.')
    }
    const refused = refusedContent(html)
    if (refused) {
      this.d.log.warn('content module refused the model\'s page', { site: site.slug, path, refused })
      throw new DomainError('upstream_failed', `The AI provider's page has ${refused}, which Berth never writes from a model's answer (only plain HTML, CSS, links and images); nothing was written. Try again, or reword the brief.`)
    }
    await this.d.files.write(site, { path, content: html })
    const title = /<title[^>]*>([\s\S]*?)<\/title>/i.exec(html)?.[1]?.trim() ?? null
    this.d.log.info('content module wrote a page', { site: site.slug, path, bytes: Buffer.byteLength(html), tokens: result.usage.totalTokens })
    return { path, url: `${this.d.siteUrl(site.slug).replace(/\/$/, '')}${urlOf(path.slice('public/'.length))}`, title, bytes: Buffer.byteLength(html), overwritten: exists, tokens_used: result.usage.totalTokens }
  }
}
