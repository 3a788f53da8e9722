import { Elysia, t } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { GenerateContentBody, GeneratedPage, ModuleParams, ModuleView, SeoReport, ToggleModuleBody } from './model'
import type { ModulesService } from '../../domain/modules/service'
import type { ContentService } from '../../modules/content/service'
import { SiteParams } from '../sites/model'
import { forbidden, conflict, op, say } from '../../domain/errors'
import { seoReport } from '../../modules/seo/report'
import type { SiteRow } from '../../store/schema'
import type { SiteFiles } from '../../drivers/files/site-reader'
import type { AiModule } from '../../core/enums'

const tags = ['Modules']

export interface ModuleRouteDeps {
  modules: ModulesService
  content: ContentService
  /** The site's files, read-only (the seo report). */
  files: SiteFiles
}

/** forbidden when the plan lacks the module, conflict when it is off: the module's own routes need it on. */
function requireOn(d: ModuleRouteDeps, site: SiteRow, name: AiModule): void {
  const state = d.modules.list(site).find((m) => m.name === name)!
  if (!state.included) throw forbidden(say`The ${site.planSlug} plan does not include the ${name} module; scale to a plan that does (${op('listPlans')}).`)
  if (!state.available) throw conflict(`The ${name} module is not available on this server: ${state.unavailable_reason}`)
  if (!state.enabled) throw conflict(say`The ${name} module is off for '${site.slug}'; turn it on first (${op('toggleModule', { tenant_slug: site.slug, module_name: name })}).`)
}

export const moduleRoutes = (plugins: ApiPlugins, d: ModuleRouteDeps) =>
  new Elysia({ name: 'module-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/modules/', ({ site }) => d.modules.list(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(ModuleView)),
      detail: { tags, summary: "List the AI modules: whether the plan includes each, whether it is on, and whether this server can run it", operationId: 'listModules' },
    })
    .post('/sites/:tenant_slug/modules/:module_name/toggle/', ({ site, params, body }) => d.modules.toggle(site, params.module_name, body.enabled), {
      scope: 'write',
      site: 'changeable',
      params: ModuleParams,
      body: ToggleModuleBody,
      response: ok(ModuleView),
      detail: { tags, summary: 'Turn a module on or off (flips it without a body)', operationId: 'toggleModule' },
    })
    .get('/sites/:tenant_slug/modules/seo/report/', async ({ site }) => {
      const state = d.modules.list(site).find((m) => m.name === 'seo')!
      if (!state.included) throw forbidden(say`The ${site.planSlug} plan does not include the seo module; scale to a plan that does (${op('listPlans')}).`)
      return d.files.read(site.slug, (files) => seoReport(files, state.enabled))
    }, {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(SeoReport),
      // The site's files may be unavailable (its volume is being replaced): SiteNotRunnableError.
      errors: [409],
      detail: { tags, summary: "Each HTML page's search-engine problems, and which the seo module fixes as pages are served", operationId: 'getSeoReport' },
    })
    .post('/sites/:tenant_slug/modules/content/generate/', async ({ site, body, set }) => {
      requireOn(d, site, 'content')
      const page = await d.content.generate(site, body)
      set.status = 201
      return page
    }, {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: GenerateContentBody,
      response: ok(GeneratedPage, 201),
      errors: [409, 413, 429, 502, 504],
      detail: { tags, summary: 'Write a new page from a brief with the AI provider, into public/ (never over a file without overwrite)', operationId: 'generateContent' },
    })
