import type { AiModule } from '../../core/enums'
import type { SiteRow } from '../../store/schema'
import type { ContentBrief, GeneratedPage, SeoReport } from './views'

/** The site a module acts on. */
export interface ModuleSite {
  siteId: string
  slug: string
}

/**
 * One AI module (design.md: chatbot, seo, translation, content), as the modules service sees it.
 * Turning a module on or off goes through here, so what each module does lives behind this one
 * interface; the modules themselves (src/modules/<name>/driver.ts) implement it and the
 * composition root hands them to the service.
 *
 * Contracts: `enable` and `disable` are idempotent (enabling an enabled module changes
 * nothing) and run after the new state is recorded; a failure is logged, never undoes the
 * state, and the next toggle runs them again.
 */
export interface AiModuleDriver {
  name: AiModule
  /** One sentence for listings: what the module does for the site. */
  description: string
  enable(site: ModuleSite): Promise<void>
  disable(site: ModuleSite): Promise<void>
}

/** The seo module, which also reports each page's search-engine problems. */
export interface SeoModuleDriver extends AiModuleDriver {
  name: 'seo'
  /**
   * Each HTML page of the site and its problems, as its files have them; those the module fixes
   * at the edge are marked so only when `seoOn`. Read-only; throws SiteNotRunnableError while
   * the site's files are unavailable.
   */
  report(site: ModuleSite, seoOn: boolean): Promise<SeoReport>
}

/** The content module, which writes new pages from a brief. */
export interface ContentModuleDriver extends AiModuleDriver {
  name: 'content'
  /**
   * A new page written into the site's public/ folder, never over a file unless `overwrite`.
   * Not idempotent: each call asks the AI provider again and counts against the site's tokens.
   */
  generate(site: SiteRow, brief: ContentBrief): Promise<GeneratedPage>
}

/** Every module's driver, by name: the modules service is given all four. */
export interface ModuleDrivers {
  chatbot: AiModuleDriver
  seo: SeoModuleDriver
  translation: AiModuleDriver
  content: ContentModuleDriver
}
