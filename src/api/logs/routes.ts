import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { LogQuery, SiteLog } from './model'
import type { LogsService } from '../../domain/logs'

export const logRoutes = (plugins: ApiPlugins, logs: LogsService) =>
  new Elysia({ name: 'log-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/logs/', ({ site, query }) => logs.read(site, query), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      query: LogQuery,
      response: ok(SiteLog),
      errors: [409],
      detail: { tags: ['Logs'], summary: "The newest lines of one of the site's logs", operationId: 'getSiteLogs' },
    })
