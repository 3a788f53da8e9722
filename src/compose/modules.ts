/** The AI modules (issue 14): the provider, each site's token allowance, and each module's service. */
import { join } from 'node:path'
import { makeModulesRepository, ModulesService } from '../domain/modules'
import type { SiteDataPurger } from '../domain/sites'
import type { FilesService } from '../domain/files'
import { selectAiProvider } from '../drivers/ai/select'
import type { AiProvider } from '../drivers/ai/types'
import { localHomes, type HomeDrivers } from '../drivers/files/home-drivers'
import { AiBudget } from '../modules/ai-calls'
import { AiUsageRepository } from '../modules/ai-usage-repository'
import { chatbotDriver } from '../modules/chatbot/driver'
import { chatbotEdge } from '../modules/chatbot/edge'
import { ChatbotService } from '../modules/chatbot/service'
import { contentDriver } from '../modules/content/driver'
import { ContentService } from '../modules/content/service'
import { SiteModulesEdge } from '../modules/edge'
import { seoDriver } from '../modules/seo/driver'
import { SeoEdge } from '../modules/seo/edge'
import { translationDriver } from '../modules/translation/driver'
import { translationEdge } from '../modules/translation/edge'
import { TranslationsRepository } from '../modules/translation/repository'
import { TranslationService } from '../modules/translation/service'
import type { Core, CoreReads } from './core'

export interface Modules {
  modules: ModulesService
  /** What the AI modules do to sites' traffic at the edge. */
  modulesEdge: SiteModulesEdge
  /** The chatbot module's per-site indexes. */
  chatbot: ChatbotService
  /** The provider the hoster configured (none by default) and each site's token allowance. */
  ai: { provider: AiProvider | null; budget: AiBudget }
  /** What a deleted site's modules leave: its chatbot index and cached translations. */
  purger: SiteDataPurger
}

/**
 * The modules and what keeps their derived data (the chatbot's index, the sitemap) in step with
 * sites' files. A site's allowance is its plan's ai_tokens_monthly, none for a site that is gone.
 */
export function buildModules(core: CoreReads<'config' | 'store' | 'clock' | 'log' | 'plans' | 'runtime' | 'changes', 'sites'>, later: { content: Pick<ContentService, 'generate'>; homes?: HomeDrivers }): Modules {
  const { config, store, clock, log, plans, runtime, changes, repos } = core
  const provider = selectAiProvider(config, log)
  const budget = new AiBudget(new AiUsageRepository(store), clock, (siteId) => {
    const site = repos.sites.find(siteId)
    return site ? plans.get(site.planSlug).features.ai_tokens_monthly : 0
  })
  // The modules read sites' files through this reader only (never node:fs: src/modules/no-fs.test.ts).
  // In a cluster (later.homes), a site's files on another node are read through its agent.
  const siteFiles = (later.homes ?? localHomes).siteFiles((slug) => runtime.homePath(slug))
  const chatbot = new ChatbotService({
    dir: join(config.server.dataDir, 'modules', 'chatbot'), files: siteFiles,
    diskBytes: (siteId) => plans.get(repos.sites.find(siteId)?.planSlug ?? '').features.disk_gb * 1024 ** 3, provider, budget, log,
  })
  const translation = provider ? new TranslationService({ repo: new TranslationsRepository(store), clock, provider, budget, log }) : null
  const seoEdge = new SeoEdge({ files: siteFiles, log })
  // Each module's edge hook, asked in this order.
  const modulesEdge = new SiteModulesEdge([chatbotEdge(chatbot), ...(translation ? [translationEdge(translation)] : []), seoEdge])
  changes.subscribe((c) => {
    chatbot.changed(c.siteId)
    modulesEdge.changed(c.siteId)
  })
  const modules = new ModulesService({
    repo: makeModulesRepository(store), clock, log, plans,
    drivers: { chatbot: chatbotDriver(chatbot), seo: seoDriver({ sitemap: seoEdge, files: siteFiles }), translation: translationDriver(translation), content: contentDriver(later.content) },
    providerConfigured: provider !== null,
    tokensUsed: (siteId) => budget.used(siteId),
    activeSites: () => repos.sites.listWithStatus(['active']),
  })
  return {
    modules, modulesEdge, chatbot,
    ai: { provider, budget },
    purger: {
      // A deleted site's chatbot index and cached translations go with it.
      removeAllFor: async (siteId) => {
        chatbot.remove(siteId)
        translation?.remove(siteId)
      },
    },
  }
}

/** The content module's page generation: it writes through the files API, so it is made once sites are. */
export function buildContent(core: Pick<Core, 'log'>, ai: Modules['ai'], sites: { files: Pick<FilesService, 'read' | 'write'>; siteUrl(slug: string): string }): ContentService {
  return new ContentService({ provider: ai.provider, budget: ai.budget, files: sites.files, siteUrl: (slug) => sites.siteUrl(slug), log: core.log })
}
