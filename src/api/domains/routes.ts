import { Elysia, t } from 'elysia'
import type { DomainsService } from '../../domain/domains'
import { DnsChange, DnsZoneView } from '../dns/model'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { AddDnsBody, RemoveDnsBody } from '../dns/model'
import { Domain, DomainParams, DomainRegistered, DomainSearch, DomainSearchQuery, DomainSettingsBody, LinkDomainBody, RegisterDomainBody } from './model'

const tags = ['Domains']

export const domainRoutes = (plugins: ApiPlugins, domains: DomainsService) =>
  new Elysia({ name: 'domain-routes' })
    .use(plugins)
    .get('/domains/', ({ principal }) => domains.list(principal), {
      scope: 'read',
      response: ok(t.Array(Domain)),
      detail: { tags, summary: 'List your domains', operationId: 'listDomains' },
    })
    .get('/domains/search/', ({ principal, query }) => domains.search(principal, query.domain), {
      scope: 'read',
      query: DomainSearchQuery,
      response: ok(DomainSearch),
      errors: [503],
      detail: { tags, summary: 'Whether a name can be registered, and its CAD prices', operationId: 'searchDomains' },
    })
    .post('/domains/register/', async ({ principal, body, set }) => {
      const registered = await domains.register(principal, body)
      set.status = 201
      return registered
    }, {
      scope: 'admin',
      body: RegisterDomainBody,
      response: ok(DomainRegistered, 201),
      errors: [402, 409, 503],
      detail: {
        tags, summary: 'Start registering a domain, paid with the payment method on file; Berth serves its DNS', operationId: 'registerDomain',
        description: 'Answers at once with the domain pending and what it charges; a job pays and registers it. getDomain then shows it active, or failed with error (nothing charged, or refunded). 402 without a payment method on file; 409 when the name is taken, pending or registered.',
      },
    })
    .get('/domains/:domain_name/', ({ principal, params }) => domains.get(principal, params.domain_name), {
      scope: 'read',
      params: DomainParams,
      response: ok(Domain),
      errors: [404],
      detail: { tags, summary: 'One of your domains', operationId: 'getDomain' },
    })
    .get('/domains/:domain_name/dns/', ({ principal, params }) => domains.dns(principal, params.domain_name), {
      scope: 'read',
      params: DomainParams,
      response: ok(DnsZoneView),
      errors: [404],
      detail: { tags, summary: "The domain's DNS records", operationId: 'listDomainDns' },
    })
    .post('/domains/:domain_name/dns/add/', ({ principal, params, body }) => domains.addDns(principal, params.domain_name, body), {
      scope: 'write',
      params: DomainParams,
      body: AddDnsBody,
      response: ok(DnsChange),
      errors: [404, 409],
      detail: { tags, summary: 'Add a DNS record to the domain (idempotent)', operationId: 'addDomainDns' },
    })
    .post('/domains/:domain_name/dns/delete/', ({ principal, params, body }) => domains.removeDns(principal, params.domain_name, body), {
      scope: 'write',
      params: DomainParams,
      body: RemoveDnsBody,
      response: ok(DnsChange),
      errors: [404],
      detail: { tags, summary: 'Delete a DNS record of the domain', operationId: 'removeDomainDns' },
    })
    .post('/domains/:domain_name/link/', ({ principal, params, body }) => domains.link(principal, params.domain_name, body.tenant_slug), {
      scope: 'write',
      params: DomainParams,
      body: LinkDomainBody,
      response: ok(Domain),
      errors: [404],
      detail: { tags, summary: 'Route the domain and its www to one of your sites (null unlinks)', operationId: 'linkDomain' },
    })
    .post('/domains/:domain_name/settings/', ({ principal, params, body }) => domains.settings(principal, params.domain_name, body), {
      scope: 'write',
      params: DomainParams,
      body: DomainSettingsBody,
      response: ok(Domain),
      errors: [404, 503],
      detail: { tags, summary: 'Change auto-renew, registrar lock and WHOIS privacy', operationId: 'updateDomainSettings' },
    })
