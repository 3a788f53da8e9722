import { eq } from 'drizzle-orm'
import { AI_MODULES, type AiModule } from '../enums'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { AiModuleDriver } from '../../modules/types'
import { sites, type SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { forbidden, notFound, op, say } from '../errors'
import type { PlansService } from '../plans/service'

export interface ModuleState {
  name: AiModule
  description: string
  included: boolean
  enabled: boolean
}

/** The AI modules of a site: which its plan includes, which are on, and turning them on and off. */
export class ModulesService {
  private drivers: Map<AiModule, AiModuleDriver>

  constructor(
    private store: Store,
    private clock: Clock,
    private log: Logger,
    private plans: PlansService,
    drivers: AiModuleDriver[],
  ) {
    this.drivers = new Map(drivers.map((d) => [d.name, d]))
  }

  list(site: SiteRow): ModuleState[] {
    return this.states(site)
  }

  /**
   * Sets the module to `enabled`, or flips it when undefined. not_found for a module name Berth does
   * not have, forbidden when the plan lacks the module (turning an excluded module off is allowed, so
   * a site that changed plan can clean up), conflict while the site cannot change.
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
    if (next !== current.enabled) {
      this.store.write(() => {
        const row = this.store.db.select({ modules: sites.modules }).from(sites).where(eq(sites.id, site.id)).get()!
        const modules = { ...(JSON.parse(row.modules) as Record<string, boolean>), [name]: next }
        this.store.db.update(sites).set({ modules: JSON.stringify(modules), updatedAt: this.clock.now() }).where(eq(sites.id, site.id)).run()
      })
      const act = next ? driver.enable : driver.disable
      await act.call(driver, { siteId: site.id, slug: site.slug }).catch((err) => this.log.error('module driver failed', { site: slug, module: name, error: (err as Error).message }))
    }
    return { ...current, enabled: next }
  }

  private states(site: SiteRow): ModuleState[] {
    const included = new Set(this.plans.get(site.planSlug).features.ai_modules)
    const enabled = JSON.parse(site.modules) as Partial<Record<AiModule, boolean>>
    return AI_MODULES.map((name) => ({
      name,
      description: this.drivers.get(name)?.description ?? '',
      included: included.has(name),
      enabled: enabled[name] === true,
    }))
  }
}
