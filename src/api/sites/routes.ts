import { Elysia, t } from 'elysia'
import { serializedResponse } from '../http/envelope'
import { JsonCache } from '../http/json-cache'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { CreateSiteBody, Site, SiteDetail, SiteParams, SiteSettingsBody } from './model'
import type { SitesService, SiteView } from '../../domain/sites'

const tags = ['Sites']

/** Most JSON of site lists kept between reads: some 270 lists of 100 sites, or 27 of 1,000. */
const LIST_CACHE_BYTES = 16 * 1024 * 1024

export const siteRoutes = (plugins: ApiPlugins, sites: SitesService) => {
  const lists = new JsonCache<SiteView[]>({ name: 'GET /sites/', schema: t.Array(Site), version: () => sites.version(), maxBytes: LIST_CACHE_BYTES })
  return new Elysia({ name: 'site-routes' })
    .use(plugins)
    .get('/sites/', ({ principal, set }) => serializedResponse(lists.get(principal.accountId, () => sites.list(principal)), set.headers['x-request-id'] as string), {
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
      errors: [507],
      detail: { tags, summary: 'Add a site under an agency subscription with room left', operationId: 'createSite' },
    })
    .get('/sites/:tenant_slug/', ({ site }) => sites.detail(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(SiteDetail),
      detail: { tags, summary: 'Get one site', operationId: 'getSite' },
    })
    .post('/sites/:tenant_slug/settings/', ({ site, body }) => sites.settings(site, body), {
      scope: 'write',
      site: 'owned',
      params: SiteParams,
      body: SiteSettingsBody,
      response: ok(Site),
      detail: { tags, summary: "Change the site's settings: HSTS (hsts_max_age)", operationId: 'updateSiteSettings' },
    })
}
