import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { SiteEnv, SiteEnvBody } from './model'
import type { SiteEnvService } from '../../domain/env'

const tags = ['Settings and secrets']

export const envRoutes = (plugins: ApiPlugins, env: SiteEnvService) =>
  new Elysia({ name: 'env-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/env/', ({ site }) => env.view(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(SiteEnv),
      detail: { tags, summary: "The site's environment variables (a secret's value is never shown)", operationId: 'getSiteEnv' },
    })
    .patch('/sites/:tenant_slug/env/', ({ site, body }) => env.patch(site, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: SiteEnvBody,
      response: ok(SiteEnv),
      detail: { tags, summary: 'Set, replace or remove (null) some variables; mark some secret. The app restarts with them without dropping requests', operationId: 'updateSiteEnv' },
    })
    .put('/sites/:tenant_slug/env/', ({ site, body }) => env.replace(site, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: SiteEnvBody,
      response: ok(SiteEnv),
      detail: { tags, summary: 'Replace the whole set of variables ({} removes them all)', operationId: 'replaceSiteEnv' },
    })
