import { Elysia } from 'elysia'
import type { DnsService } from '../../domain/dns'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { DnsChange, DnsZoneView, SiteDnsBody } from './model'

const tags = ['DNS']

export const dnsRoutes = (plugins: ApiPlugins, dns: DnsService) =>
  new Elysia({ name: 'dns-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/dns/', ({ site }) => dns.siteZone(site), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      response: ok(DnsZoneView),
      detail: { tags, summary: "The DNS records under the site's own name, and its default addresses", operationId: 'getSiteDns' },
    })
    .post('/sites/:tenant_slug/dns/', ({ site, body }) => dns.changeSite(site, body), {
      scope: 'write',
      site: 'changeable',
      params: SiteParams,
      body: SiteDnsBody,
      response: ok(DnsChange),
      errors: [404, 409],
      detail: { tags, summary: "Create or delete a DNS record under the site's name (answered by Berth's DNS at once)", operationId: 'changeSiteDns' },
    })
