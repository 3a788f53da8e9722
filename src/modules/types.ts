import type { AiModule } from '../core/enums'

/** The site a module acts on. */
export interface ModuleSite {
  siteId: string
  slug: string
}

/**
 * One AI module (design.md: chatbot, seo, translation, content). Turning a module on or off
 * goes through here, so what each module does lives behind this one interface.
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
