import { Elysia, t } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { ModuleParams, ModuleView, ToggleModuleBody } from './model'
import type { ModulesService } from '../../domain/modules/service'
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
      detail: { tags, summary: "List the AI modules, whether the site's plan includes each and whether it is on", operationId: 'listModules' },
    })
    .post('/sites/:tenant_slug/modules/:module_name/toggle/', ({ site, params, body }) => modules.toggle(site, params.module_name, body.enabled), {
      scope: 'write',
      site: 'changeable',
      params: ModuleParams,
      body: ToggleModuleBody,
      response: ok(ModuleView),
      detail: { tags, summary: 'Turn a module on or off (flips it without a body)', operationId: 'toggleModule' },
    })
