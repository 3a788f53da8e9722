import { Elysia, t } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { GenerateContentBody, GeneratedPage, ModuleParams, ModuleView, SeoReport, ToggleModuleBody } from './model'
import type { ModulesService } from '../../domain/modules'
import { SiteParams } from '../sites/model'

const tags = ['Modules']

export const moduleRoutes = (plugins: ApiPlugins, modules: ModulesService) =>
  new Elysia({ name: 'module-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/modules/', ({ site }) => modules.list(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(t.Array(ModuleView)),
      detail: { tags, summary: "List the AI modules: whether the plan includes each, whether it is on, and whether this server can run it", operationId: 'listModules' },
    })
    .post('/sites/:tenant_slug/modules/:module_name/toggle/', ({ site, params, body }) => modules.toggle(site, params.module_name, body.enabled), {
      scope: 'write',
      site: 'changeable',
      params: ModuleParams,
      body: ToggleModuleBody,
      response: ok(ModuleView),
      detail: { tags, summary: 'Turn a module on or off (flips it without a body)', operationId: 'toggleModule' },
    })
    .get('/sites/:tenant_slug/modules/seo/report/', ({ site }) => modules.seoReport(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(SeoReport),
      // The site's files may be unavailable (its volume is being replaced): SiteNotRunnableError.
      errors: [409],
      detail: { tags, summary: "Each HTML page's search-engine problems, and which the seo module fixes as pages are served", operationId: 'getSeoReport' },
    })
    .post('/sites/:tenant_slug/modules/content/generate/', async ({ site, body, set }) => {
      const page = await modules.generateContent(site, body)
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
