import { Elysia, type AnyElysia } from 'elysia'
import type { Config } from '../config/config'
import type { ArchivesService } from '../domain/archives'
import type { AuthService } from '../domain/auth'
import type { CheckoutService } from '../domain/checkout'
import type { ClaimsService } from '../domain/claims'
import type { DeploymentsService } from '../domain/deployments'
import { fileBodyLimit, type FilesService } from '../domain/files'
import { execBodyLimit, type ExecService } from '../domain/exec'
import type { KeysService } from '../domain/keys'
import type { LogsService } from '../domain/logs'
import type { SiteMetricsService } from '../domain/metrics'
import type { ModulesService } from '../domain/modules'
import type { PlansService } from '../domain/plans'
import type { RateLimiter } from '../domain/rate-limits'
import type { SiteGuard, SiteLifecycle, SitesService } from '../domain/sites'
import type { SshService } from '../domain/ssh'
import type { SiteEnvService } from '../domain/env'
import type { DatabaseArchives, DatabasesService } from '../domain/databases'
import type { WebhooksService } from '../domain/webhooks'
import type { StatusInfo } from '../domain/status'
import type { Logger } from '../lib/logger'
import type { ClientAddress } from './http/client-address'
import { authRoutes } from './auth/routes'
import { jsonBody } from './http/body'
import { deployBodyLimit, type AppIntake } from '../domain/apps'
import { envelope, type MethodLookup } from './http/envelope'
import { methodLookup } from './http/method-lookup'
import { operationRenderer } from './http/operation-routes'
import { viaMcp } from './http/doors'
import { toolName, toolsFromOpenApi, type ToolDef } from './mcp/tools'
import { discoveryRoutes } from './discovery/routes'
import type { OperationRef } from '../domain/errors'
import { strictQuery, type QueryRule } from './http/strict-query'
import { QUERY_PARAM } from './http/schemas'
import { keyRoutes } from './keys/routes'
import { buildOpenApi } from './openapi'
import { planRoutes } from './plans/routes'
import { apiPlugins, type ApiPlugins } from './plugins'
import { statusRoutes } from './status/routes'
import { checkoutRoutes } from './checkout/routes'
import { payRoutes } from './pay/routes'
import { siteRoutes } from './sites/routes'
import { moduleRoutes } from './modules/routes'
import { claimRoutes } from './claims/routes'
import { sshRoutes } from './ssh/routes'
import { envRoutes } from './env/routes'
import { databaseRoutes } from './databases/routes'
import { webhookEndpointRoutes } from './webhook-endpoints/routes'
import { logRoutes } from './logs/routes'
import { fileRoutes } from './files/routes'
import { execRoutes } from './exec/routes'
import { deploymentRoutes, isArchiveDeploy } from './deployments/routes'
import { metricsRoutes } from './metrics/routes'
import { siteLifecycleRoutes } from './sites/lifecycle-routes'
import { archiveRoutes } from './archives/routes'
import { dnsRoutes } from './dns/routes'
import { domainRoutes } from './domains/routes'
import type { DnsService } from '../domain/dns'
import type { DomainsService } from '../domain/domains'
import type { AccountRecords, AccountsService } from '../domain/accounts'
import type { BillingRecords, PortalLinks, SubscriptionBilling } from '../domain/billing'
import { TEST_PAYMENT_METHODS, type PaymentProcessor } from '../drivers/payments/types'
import { accountRoutes } from './account/routes'
import { isPortalForm, portalRoutes } from './portal/routes'
import { consoleRoutes } from './console/routes'
import { eventRoutes } from './events/routes'
import type { EventFeed } from '../domain/events'
import type { ConsoleService } from '../domain/console'

/**
 * What the REST door needs: the domain's services (built by the composition root, src/compose/),
 * the config and the log. Declared here so that the door depends on the domain, not on the root.
 */
export interface ApiDeps {
  /** The brand's SKU prefix, the body limit, and what the discovery documents say. */
  config: Pick<Config, 'brand' | 'server' | 'sites' | 'archives'>
  log: Logger
  status: StatusInfo
  plans: PlansService
  keys: KeysService
  auth: AuthService
  limiter: RateLimiter
  clients: ClientAddress
  guard: SiteGuard
  checkout: CheckoutService
  /** The live payment processor; one with `pages` (the built-in one) also has its hosted page and billing portal served here. */
  processor: PaymentProcessor
  accounts: AccountsService
  subscriptions: SubscriptionBilling
  billing: BillingRecords
  portalLinks: PortalLinks
  accountsRepo: AccountRecords
  sites: SitesService
  lifecycle: SiteLifecycle
  modules: ModulesService
  claims: ClaimsService
  ssh: SshService
  logs: LogsService
  files: FilesService
  exec: ExecService
  /** A site's settings and secrets. */
  env: SiteEnvService
  /** A site's managed databases (issue 40). */
  databases: DatabasesService
  /** The account's webhook endpoints and their deliveries (issue 41). */
  webhooks: WebhooksService
  /** A database restored alone from an archive, or back from its deletion grace (issue 40). */
  databaseArchives: DatabaseArchives
  deployments: DeploymentsService
  /** Deployments with a source (issue 39): an archive received and checked, a repository's address checked. */
  appIntake: AppIntake
  siteMetrics: SiteMetricsService
  archives: ArchivesService
  dns: DnsService
  domains: DomainsService
  consoles: ConsoleService
  /** The event log as agents read it (issue 41): GET /events/ and its long poll. */
  eventFeed: EventFeed
}

/**
 * The HTTP application: the envelope and body parser around every route, and each feature's
 * routes, as `routeGroups` (below) lists them. Built from services, never from config or globals, so tests can call
 * `createApp(services).handle(request)` with their own graph.
 */
export function createApp(s: ApiDeps) {
  let lookup: MethodLookup = () => []
  let route: (ref: OperationRef) => string = (ref) => ref.operation
  let queryRules: ReadonlyMap<string, QueryRule> = new Map()
  const plugins = apiPlugins({ keys: s.keys, guard: s.guard, checkouts: s.checkout, limiter: s.limiter, clients: s.clients })
  let openapi: ReturnType<typeof buildOpenApi> | undefined
  const document = () => (openapi ??= buildOpenApi(app, { baseUrl: s.config.server.baseUrl, version: s.status.version, testMode: s.status.testMode }))
  const groups = routeGroups(s, plugins, document)
  const api = new Elysia({ prefix: API_V1, normalize: false, encodeSchema: false })
  for (const group of groups) if (group.at === API_V1) api.use(group.routes)
  // encodeSchema off: with it, any response schema holding a t.Integer (a transform type in
  // Elysia) runs TypeBox's interpreted encode on every response, 60-76% of the CPU of
  // GET /plans/ and /auth/whoami/ (bench/, issue 2). Responses are still validated.
  const app: AnyElysia = new Elysia({ name: 'berth', normalize: false, encodeSchema: false })
    .use(envelope({ log: s.log, methodsFor: (path) => lookup(path), route: (ref, request) => (viaMcp.has(request) ? toolName(ref.operation) : route(ref)) }))
    .use(jsonBody(s.config.server.maxBodyBytes, (path) => fileBodyLimit(path) ?? execBodyLimit(path) ?? deployBodyLimit(path), (path) => /^\/pay\/[^/]+\/$/.test(path) || isPortalForm(path), isArchiveDeploy))
    .use(strictQuery(() => queryRules))
    .use(plugins)
    .use(api)
  for (const group of groups) if (group.at === '') app.use(group.routes)
  lookup = methodLookup(app.routes)
  route = operationRenderer(app.routes)
  queryRules = queryRulesOf(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>

/** Where the API's own routes live; each group below is mounted under it or at the root. */
const API_V1 = '/api/v1'

/** One feature's routes as the app mounts them, and the paths they own. */
export interface RouteGroup {
  /** Mounted under /api/v1, or at the root (''). */
  at: typeof API_V1 | ''
  /** Every route of the group starts with one of these, after `at` (app.test.ts holds it to that). */
  owns: readonly string[]
  routes: AnyElysia
}

/**
 * Every route of the app, by feature, in the order the app mounts them: which file answers a URL
 * that src/dispatch.ts sends to the app (all that no earlier entry of its table took). The
 * processor's pages exist when the processor the composition root chose has them
 * (`processor.pages`: the built-in one; Stripe hosts its own).
 */
export function routeGroups(s: ApiDeps, plugins: ApiPlugins, document: () => ReturnType<typeof buildOpenApi>): RouteGroup[] {
  let tools: ToolDef[] | undefined
  const pages = s.processor.pages
  return [
    { at: API_V1, owns: ['/status/'], routes: statusRoutes(plugins, s.status) },
    { at: API_V1, owns: ['/plans/'], routes: planRoutes(plugins, s.plans) },
    { at: API_V1, owns: ['/auth/'], routes: authRoutes(plugins, s.auth) },
    { at: API_V1, owns: ['/keys/'], routes: keyRoutes(plugins, s.keys) },
    { at: API_V1, owns: ['/acp/checkouts/'], routes: checkoutRoutes(plugins, s.checkout, s.config.brand.prefix) },
    { at: API_V1, owns: ['/sites/'], routes: siteRoutes(plugins, s.sites) },
    { at: API_V1, owns: ['/sites/:tenant_slug/modules/'], routes: moduleRoutes(plugins, s.modules) },
    { at: API_V1, owns: ['/keys/claim/'], routes: claimRoutes(plugins, s.claims) },
    { at: API_V1, owns: ['/sites/:tenant_slug/ssh/'], routes: sshRoutes(plugins, s.ssh) },
    { at: API_V1, owns: ['/sites/:tenant_slug/logs/'], routes: logRoutes(plugins, s.logs) },
    { at: API_V1, owns: ['/sites/:tenant_slug/files/'], routes: fileRoutes(plugins, s.files) },
    { at: API_V1, owns: ['/sites/:tenant_slug/exec/'], routes: execRoutes(plugins, s.exec) },
    { at: API_V1, owns: ['/sites/:tenant_slug/env/'], routes: envRoutes(plugins, s.env) },
    { at: API_V1, owns: ['/sites/:tenant_slug/databases/'], routes: databaseRoutes(plugins, s.databases, s.databaseArchives) },
    { at: API_V1, owns: ['/sites/:tenant_slug/deploy/', '/sites/:tenant_slug/deployments/'], routes: deploymentRoutes(plugins, s.deployments, s.appIntake) },
    { at: API_V1, owns: ['/sites/:tenant_slug/metrics/'], routes: metricsRoutes(plugins, s.siteMetrics) },
    { at: API_V1, owns: ['/sites/:tenant_slug/delete/', '/sites/:tenant_slug/restore/', '/sites/:tenant_slug/scale/'], routes: siteLifecycleRoutes(plugins, s.lifecycle) },
    { at: API_V1, owns: ['/sites/:tenant_slug/snapshot', '/sites/:tenant_slug/backups/'], routes: archiveRoutes(plugins, s.archives) },
    { at: API_V1, owns: ['/sites/:tenant_slug/dns/'], routes: dnsRoutes(plugins, s.dns) },
    { at: API_V1, owns: ['/sites/:tenant_slug/console/'], routes: consoleRoutes(plugins, s.consoles) },
    { at: API_V1, owns: ['/domains/'], routes: domainRoutes(plugins, s.domains) },
    { at: API_V1, owns: ['/webhooks/'], routes: webhookEndpointRoutes(plugins, s.webhooks) },
    { at: API_V1, owns: ['/account/'], routes: accountRoutes(plugins, s.accounts, s.subscriptions) },
    { at: API_V1, owns: ['/events/'], routes: eventRoutes(plugins, s.eventFeed) },
    ...(pages
      ? [
        { at: '', owns: ['/pay/'], routes: payRoutes(plugins, pages) },
        { at: '', owns: ['/billing/portal/'], routes: portalRoutes(plugins, { pages, links: s.portalLinks, subscriptions: s.subscriptions, billing: s.billing, accounts: s.accountsRepo }) },
      ] as const
      : []),
    {
      at: '',
      owns: ['/.well-known/', '/llms.txt', '/api/pricing.json', '/for-agents', '/agent-native/', '/logo.svg'],
      routes: discoveryRoutes({ config: s.config, status: s.status, plans: s.plans, tools: () => (tools ??= toolsFromOpenApi(document())), testPaymentMethods: [...TEST_PAYMENT_METHODS] }),
    },
    { at: '', owns: ['/api/v1/openapi.json', '/api/v1/docs/'], routes: documentRoutes(plugins, document) },
  ]
}

/** The API's own description: the OpenAPI document, and the reference page that renders it. */
function documentRoutes(plugins: ApiPlugins, document: () => ReturnType<typeof buildOpenApi>) {
  return new Elysia({ name: 'document-routes' })
    .use(plugins)
    .get('/api/v1/openapi.json', () => Response.json(document()), {
      public: true,
      detail: { hide: true },
    })
    // The reference page's renderer (and its themes) load on first use, not at start-up.
    .get('/api/v1/docs/', async () => {
      const { ScalarRender } = await import('@elysiajs/swagger/scalar')
      const html = ScalarRender({ title: 'Berth hosting API', version: '1.0', description: 'API reference' }, '1.0', { spec: { url: '/api/v1/openapi.json' } } as never, 'https://cdn.jsdelivr.net/npm/@scalar/api-reference')
      return new Response(html, { headers: { 'content-type': 'text/html; charset=utf-8' } })
    }, { public: true, detail: { hide: true } })
}

/** The query rules of the API's routes; the documents (openapi.json, docs) take any query. */
function queryRulesOf(routes: { method: string; path: string; hooks: unknown }[]): Map<string, QueryRule> {
  const rules = new Map<string, QueryRule>()
  for (const r of routes) {
    if (!r.path.startsWith('/api/v1/') || r.path.startsWith('/api/v1/openapi') || r.path.startsWith('/api/v1/docs')) continue
    const query = (r.hooks as { query?: { properties?: Record<string, Record<string, unknown>> } }).query
    const integers = new Set(Object.entries(query?.properties ?? {}).filter(([, schema]) => schema[QUERY_PARAM] !== undefined).map(([name]) => name))
    if (!query || integers.size > 0) rules.set(`${r.method} ${r.path}`, { none: !query, integers })
  }
  return rules
}
