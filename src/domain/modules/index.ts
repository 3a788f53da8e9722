/** The modules area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export type { AiModuleDriver, ContentModuleDriver, SeoModuleDriver } from './driver'
export { ModulesService } from './service'
export { GeneratedPage, ModuleView, SeoReport } from './views'
export type { ContentBrief } from './views'
