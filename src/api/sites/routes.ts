import { Elysia, t } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { CreateSiteBody, Site, SiteParams } from './model'
import type { SitesService } from '../../domain/sites/service'

const tags = ['Sites']

export const siteRoutes = (plugins: ApiPlugins, sites: SitesService) =>
  new Elysia({ name: 'site-routes' })
    .use(plugins)
    .get('/sites/', ({ principal }) => sites.list(principal), {
      scope: 'read',
      response: ok(t.Array(Site)),
      detail: { tags, summary: "List the account's sites", operationId: 'listSites' },
    })
    .post('/sites/create/', ({ principal, body, set }) => {
      set.status = 201
      return sites.create(principal, body)
    }, {
      scope: 'admin',
      body: CreateSiteBody,
      response: ok(Site, 201),
      detail: { tags, summary: 'Add a site under an agency subscription with room left', operationId: 'createSite' },
    })
    .get('/sites/:tenant_slug/', ({ site }) => sites.view(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(Site),
      detail: { tags, summary: 'Get one site', operationId: 'getSite' },
    })
