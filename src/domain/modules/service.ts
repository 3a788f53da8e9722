import { AI_MODULES, type AiModule } from '../../core/enums'
import { TOKEN_MODULES } from '../../config/schema'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteModuleFlags } from '../../edge/types'
import type { SiteRow } from '../../store/schema'
import { conflict, forbidden, notFound, op, say } from '../errors'
import type { PlansService } from '../plans'
import type { AiModuleDriver, ModuleDrivers } from './driver'
import type { ModulesRepository } from './repository'
import type { ContentBrief, GeneratedPage, ModuleState, SeoReport } from './views'

/** The modules that need an AI provider to do anything (design.md: seo and chatbot work without one). */
const NEEDS_PROVIDER = new Set<AiModule>(['translation', 'content'])

export interface ModulesServiceDeps {
  repo: ModulesRepository
  clock: Clock
  log: Logger
  plans: Pick<PlansService, 'get'>
  /** The modules themselves (src/modules/<name>/driver.ts), wired by the composition root. */
  drivers: ModuleDrivers
  /** Whether the hoster configured an AI provider (`ai.base_url`). */
  providerConfigured: boolean
  /** Tokens the site used this month (its allowance is its plan's `ai_tokens_monthly`). */
  tokensUsed(siteId: string): number
  activeSites(): SiteRow[]
}

/**
 * The AI modules of a site: which its plan includes, which are on and available here, turning
 * them on and off, the flags the edge reads for each request, and the modules' own actions (the
 * seo report, content generation) behind the plan gate.
 */
export class ModulesService {
  private drivers: Map<AiModule, AiModuleDriver>
  private flags = new Map<string, SiteModuleFlags | undefined>()

  constructor(private d: ModulesServiceDeps) {
    this.drivers = new Map(Object.values(d.drivers).map((x: AiModuleDriver) => [x.name, x]))
  }

  list(site: SiteRow): ModuleState[] {
    return this.states(site)
  }

  /**
   * Why a module cannot work on this installation, or null when it can. A plan's allowance of 0
   * does not make a module unavailable: its model calls answer 429 (the chatbot answers by search).
   */
  unavailable(name: AiModule): string | null {
    if (!NEEDS_PROVIDER.has(name)) return null
    if (!this.d.providerConfigured) return `No AI provider is configured on this server; the hoster sets ai.base_url and ai.model (docs/configuration.md).`
    return null
  }

  /**
   * Sets the module to `enabled`, or flips it when undefined. not_found for a module name Berth does
   * not have, forbidden when the plan lacks the module (turning an excluded module off is allowed, so
   * a site that changed plan can clean up), conflict when this installation cannot run it (no AI
   * provider) or while the site cannot change.
   */
  async toggle(site: SiteRow, name: string, enabled: boolean | undefined): Promise<ModuleState> {
    const slug = site.slug
    const driver = this.drivers.get(name as AiModule)
    if (!driver || !AI_MODULES.includes(name as AiModule)) {
      throw notFound(`No module '${name}'; the modules are ${AI_MODULES.join(', ')}.`, 'module_name')
    }
    const current = this.states(site).find((m) => m.name === name)!
    const next = enabled ?? !current.enabled
    if (next && !current.included) {
      throw forbidden(say`The ${site.planSlug} plan does not include the ${name} module; scale to a plan that does (${op('listPlans')} lists each plan's ai_modules).`, 'module_name')
    }
    if (next && !current.available) throw conflict(`The ${name} module cannot be turned on here: ${current.unavailable_reason}`, 'module_name')
    if (next !== current.enabled) {
      this.d.repo.setEnabled(site.id, name, next, this.d.clock.now())
      const act = next ? driver.enable : driver.disable
      await act.call(driver, { siteId: site.id, slug: site.slug }).catch((err) => this.d.log.error('module driver failed', { site: slug, module: name, error: (err as Error).message }))
      this.d.log.info(next ? 'module turned on' : 'module turned off', { site: slug, module: name })
    }
    return { ...current, enabled: next }
  }

  /**
   * Each HTML page's search-engine problems, from the site's files. forbidden when the plan lacks
   * the seo module; the report is there whether the module is on or off (what it would fix at the
   * edge is marked only while it is on).
   */
  async seoReport(site: SiteRow): Promise<SeoReport> {
    const state = this.requireIncluded(site, 'seo')
    return this.d.drivers.seo.report({ siteId: site.id, slug: site.slug }, state.enabled)
  }

  /** A new page written from a brief by the content module, which must be on (requireOn). */
  async generateContent(site: SiteRow, brief: ContentBrief): Promise<GeneratedPage> {
    this.requireOn(site, 'content')
    return this.d.drivers.content.generate(site, brief)
  }

  /**
   * The gate of a module's own actions: forbidden when the plan lacks the module, conflict when
   * this server cannot run it or it is off.
   */
  requireOn(site: SiteRow, name: AiModule): void {
    const state = this.requireIncluded(site, name)
    if (!state.available) throw conflict(`The ${name} module is not available on this server: ${state.unavailable_reason}`)
    if (!state.enabled) throw conflict(say`The ${name} module is off for '${site.slug}'; turn it on first (${op('toggleModule', { tenant_slug: site.slug, module_name: name })}).`)
  }

  /** The module's state for the site; forbidden when the site's plan does not include it. */
  private requireIncluded(site: SiteRow, name: AiModule): ModuleState {
    const state = this.states(site).find((m) => m.name === name)!
    if (!state.included) throw forbidden(say`The ${site.planSlug} plan does not include the ${name} module; scale to a plan that does (${op('listPlans')}).`)
    return state
  }

  /** The active sites with `name` on (for the modules' periodic upkeep). */
  sitesWith(name: AiModule): SiteRow[] {
    return this.d.activeSites().filter((site) => site.modules.includes(`"${name}":true`) && this.isOn(site, name))
  }

  /** Whether `name` is on (and included and available) for the site. */
  isOn(site: SiteRow, name: AiModule): boolean {
    const state = this.states(site).find((m) => m.name === name)!
    return state.enabled && state.included && state.available
  }

  /**
   * What the edge does for the site: the modules on, included in its plan and available, or
   * undefined when none acts on traffic. Memoised by plan and module state: it runs on every
   * proxied request.
   */
  edgeFlags(site: SiteRow): SiteModuleFlags | undefined {
    if (site.modules === '{}') return undefined
    const key = `${site.planSlug}|${site.modules}`
    if (this.flags.has(key)) return this.flags.get(key)
    const on = (name: AiModule) => this.isOn(site, name)
    const flags = { seo: on('seo'), chatbot: on('chatbot'), translation: on('translation') }
    const result = flags.seo || flags.chatbot || flags.translation ? flags : undefined
    if (this.flags.size > 1000) this.flags.clear()
    this.flags.set(key, result)
    return result
  }

  private states(site: SiteRow): ModuleState[] {
    const { ai_modules: included, ai_tokens_monthly: monthly } = this.d.plans.get(site.planSlug).features
    const enabled = JSON.parse(site.modules) as Partial<Record<AiModule, boolean>>
    const configured = this.d.providerConfigured
    const used = configured ? this.d.tokensUsed(site.id) : 0
    return AI_MODULES.map((name) => {
      const reason = this.unavailable(name)
      return {
        name,
        description: this.drivers.get(name)?.description ?? '',
        included: included.includes(name),
        enabled: enabled[name] === true,
        available: reason === null,
        unavailable_reason: reason,
        // The chatbot calls the model only with a provider and tokens to spend; else it answers by search.
        uses_ai_provider: NEEDS_PROVIDER.has(name) || (name === 'chatbot' && configured && monthly > 0),
        ai_tokens: TOKEN_MODULES.includes(name) && configured ? { monthly, used_this_month: used } : null,
      }
    })
  }
}
