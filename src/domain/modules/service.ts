import { eq } from 'drizzle-orm'
import { AI_MODULES, type AiModule } from '../enums'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { AiModuleDriver } from '../../modules/types'
import type { SiteModuleFlags } from '../../edge/types'
import { sites, type SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, forbidden, notFound, op, say } from '../errors'
import type { PlansService } from '../plans/service'
import type { ModuleState } from './views'

/** The modules that need an AI provider to do anything (design.md: seo and chatbot work without one). */
const NEEDS_PROVIDER = new Set<AiModule>(['translation', 'content'])

export interface ModulesServiceDeps {
  store: Store
  clock: Clock
  log: Logger
  plans: Pick<PlansService, 'get'>
  drivers: AiModuleDriver[]
  /** Whether the hoster configured an AI provider (`ai.base_url`), and the monthly token allowance. */
  provider: { configured: boolean; tokensPerSiteMonthly: number }
  /** Tokens the site used this month. */
  tokensUsed(siteId: string): number
  activeSites(): SiteRow[]
}

/**
 * The AI modules of a site: which its plan includes, which are on and available here, turning
 * them on and off, and the flags the edge reads for each request.
 */
export class ModulesService {
  private drivers: Map<AiModule, AiModuleDriver>
  private flags = new Map<string, SiteModuleFlags | undefined>()

  constructor(private d: ModulesServiceDeps) {
    this.drivers = new Map(d.drivers.map((x) => [x.name, x]))
  }

  list(site: SiteRow): ModuleState[] {
    return this.states(site)
  }

  /** Why a module cannot work on this installation, or null when it can. */
  unavailable(name: AiModule): string | null {
    if (!NEEDS_PROVIDER.has(name)) return null
    if (!this.d.provider.configured) return `No AI provider is configured on this server; the hoster sets ai.base_url and ai.model (docs/configuration.md).`
    if (this.d.provider.tokensPerSiteMonthly === 0) return 'AI calls are turned off on this server (ai.tokens_per_site_monthly is 0).'
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
      this.d.store.write(() => {
        const row = this.d.store.db.select({ modules: sites.modules }).from(sites).where(eq(sites.id, site.id)).get()!
        const modules = { ...(JSON.parse(row.modules) as Record<string, boolean>), [name]: next }
        this.d.store.db.update(sites).set({ modules: JSON.stringify(modules), updatedAt: this.d.clock.now() }).where(eq(sites.id, site.id)).run()
      })
      const act = next ? driver.enable : driver.disable
      await act.call(driver, { siteId: site.id, slug: site.slug }).catch((err) => this.d.log.error('module driver failed', { site: slug, module: name, error: (err as Error).message }))
      this.d.log.info(next ? 'module turned on' : 'module turned off', { site: slug, module: name })
    }
    return { ...current, enabled: next }
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
    const included = new Set(this.d.plans.get(site.planSlug).features.ai_modules)
    const enabled = JSON.parse(site.modules) as Partial<Record<AiModule, boolean>>
    const used = this.d.provider.configured ? this.d.tokensUsed(site.id) : 0
    return AI_MODULES.map((name) => {
      const reason = this.unavailable(name)
      const needsTokens = NEEDS_PROVIDER.has(name) || name === 'chatbot'
      return {
        name,
        description: this.drivers.get(name)?.description ?? '',
        included: included.has(name),
        enabled: enabled[name] === true,
        available: reason === null,
        unavailable_reason: reason,
        uses_ai_provider: NEEDS_PROVIDER.has(name) || (name === 'chatbot' && this.d.provider.configured),
        ai_tokens: needsTokens && this.d.provider.configured ? { monthly: this.d.provider.tokensPerSiteMonthly, used_this_month: used } : null,
      }
    })
  }
}
