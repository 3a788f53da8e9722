import { Elysia, t } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { ModuleParams, ModuleView, ToggleModuleBody } from './model'
import type { ModulesService } from './service'
import { SiteParams } from '../sites/model'

const tags = ['Modules']

export const moduleRoutes = (plugins: ApiPlugins, modules: ModulesService) =>
  new Elysia({ name: 'module-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/modules/', ({ principal, params }) => modules.list(principal, params.tenant_slug), {
      scope: 'read',
      params: SiteParams,
      response: ok(t.Array(ModuleView)),
      detail: { tags, summary: "List the AI modules, whether the site's plan includes each and whether it is on", operationId: 'listModules' },
    })
    .post('/sites/:tenant_slug/modules/:module_name/toggle/', ({ principal, params, body }) => modules.toggle(principal, params.tenant_slug, params.module_name, body.enabled), {
      scope: 'write',
      params: ModuleParams,
      body: ToggleModuleBody,
      response: ok(ModuleView),
      detail: { tags, summary: 'Turn a module on or off (flips it without a body)', operationId: 'toggleModule' },
    })
