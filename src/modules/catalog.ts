import type { AiModule } from '../core/enums'
import type { AiModuleDriver, ModuleSite } from './types'

const DESCRIPTIONS: Record<AiModule, string> = {
  chatbot: "A chat widget on the site's pages that answers visitors from the site's own pages, linking the page it used.",
  seo: 'A sitemap.xml and robots.txt made from the pages, missing titles, descriptions, canonical and OpenGraph tags added as pages are served, and a report of what each page lacks.',
  translation: 'Every page served translated under /{lang}/ (fr, es, de, it, pt, nl, en), cached per page version; needs an AI provider.',
  content: 'New pages written from a brief into public/, one per generate request; needs an AI provider.',
}

/** What turning a module on or off does beyond recording it. */
export interface ModuleEffects {
  /** The chatbot's index: built when it is turned on, deleted when it is turned off. */
  chatbot: { sync(site: ModuleSite): Promise<void>; remove(siteId: string): void }
  /** Cached translations, deleted when the module is turned off. */
  translation: { remove(siteId: string): void } | null
  /** The edge's cached sitemap of the site. */
  sitemap: { changed(siteId: string): void }
}

/**
 * The four AI modules (design.md, AI modules). Their effects on traffic are the edge's
 * (src/modules/edge.ts, from the flags the site directory reads); what happens at the switch is
 * here: a module that is turned off leaves nothing behind.
 */
export function moduleDrivers(effects: ModuleEffects): AiModuleDriver[] {
  const none = async () => {}
  return [
    { name: 'chatbot', description: DESCRIPTIONS.chatbot, enable: (site) => effects.chatbot.sync(site), disable: async (site) => effects.chatbot.remove(site.siteId) },
    { name: 'seo', description: DESCRIPTIONS.seo, enable: async (site) => effects.sitemap.changed(site.siteId), disable: async (site) => effects.sitemap.changed(site.siteId) },
    { name: 'translation', description: DESCRIPTIONS.translation, enable: none, disable: async (site) => effects.translation?.remove(site.siteId) },
    { name: 'content', description: DESCRIPTIONS.content, enable: none, disable: none },
  ]
}
