/** The modules area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { ModulesRepository } from './repository'
export type { AiModuleDriver, ContentModuleDriver, SeoModuleDriver } from './driver'
export { ModulesService } from './service'
export { GeneratedPage, ModuleView, SeoReport } from './views'
export type { ContentBrief } from './views'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeModulesRepository(store: Store): ModulesRepository {
  return new ModulesRepository(store)
}
