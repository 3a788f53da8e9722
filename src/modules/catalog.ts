import type { AiModule } from '../domain/enums'
import type { AiModuleDriver } from './types'

const DESCRIPTIONS: Record<AiModule, string> = {
  chatbot: 'A chat assistant for the site, answering visitors from its pages.',
  seo: 'Search-engine metadata, sitemap and titles for the pages of the site.',
  translation: 'Translations of the pages of the site into other languages.',
  content: 'Drafts of pages and posts in the tone of the site.',
}

/**
 * The modules as records only: their state is kept and shown, and turning one on has no effect
 * on the site yet. A later release replaces these with drivers that act (issue 5 keeps the
 * interface, not the effects).
 */
export function recordOnlyModules(): AiModuleDriver[] {
  return (Object.keys(DESCRIPTIONS) as AiModule[]).map((name) => ({
    name,
    description: DESCRIPTIONS[name],
    enable: async () => {},
    disable: async () => {},
  }))
}
