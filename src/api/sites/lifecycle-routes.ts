import { Elysia } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import type { SiteLifecycle } from '../../domain/sites'
import { ScaleBody, Site, SiteParams } from './model'

const tags = ['Sites']

/** Plan changes, deletion and restore of a site (admin: they touch money or destroy). */
export const siteLifecycleRoutes = (plugins: ApiPlugins, lifecycle: SiteLifecycle) =>
  new Elysia({ name: 'site-lifecycle-routes' })
    .use(plugins)
    .post('/sites/:tenant_slug/scale/', ({ site, body }) => lifecycle.scale(site, body.new_plan), {
      scope: 'admin',
      site: 'owned',
      params: SiteParams,
      body: ScaleBody,
      response: ok(Site),
      errors: [402, 409],
      detail: { tags, summary: 'Move the site (and its subscription) to another plan; files kept', operationId: 'scaleSite' },
    })
    .delete('/sites/:tenant_slug/delete/', ({ site }) => lifecycle.delete(site), {
      scope: 'admin',
      site: 'owned',
      params: SiteParams,
      body: NoBody,
      response: ok(Site),
      errors: [409],
      detail: { tags, summary: 'Schedule the site for deletion in 7 days; it stops serving at once', operationId: 'deleteSite' },
    })
    .post('/sites/:tenant_slug/restore/', ({ site }) => lifecycle.restore(site), {
      scope: 'admin',
      site: 'owned',
      params: SiteParams,
      body: NoBody,
      response: ok(Site),
      errors: [409],
      detail: { tags, summary: 'Cancel a scheduled deletion within its grace period', operationId: 'restoreSite' },
    })
