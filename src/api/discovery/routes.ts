import { Elysia } from 'elysia'
import type { Config } from '../../config/config'
import type { PlansService } from '../../domain/plans'
import type { StatusInfo } from '../../domain/status'
import type { ToolDef } from '../mcp/tools'
import { acpDocument, aiPluginManifest, llmsTxt, mcpServerCard, pricingDocument, type DiscoveryFacts } from './documents'
import { agentNativePage, forAgentsPage, LOGO_SVG, PAGE_CSP } from './pages'

/**
 * Clients may keep a document this long; after that they revalidate with its ETag (304 when
 * nothing changed). A plan added or deprecated is in every fresh answer at once.
 */
export const DISCOVERY_CACHE_CONTROL = 'public, max-age=300'

export interface DiscoveryDeps {
  /** What the documents say of the server, its sites and its backups. */
  config: Pick<Config, 'brand' | 'server' | 'sites' | 'archives'>
  status: StatusInfo
  plans: PlansService
  /** The MCP tools (made from the OpenAPI document, built on first use). */
  tools(): ToolDef[]
  /** Payment-method ids the test processor accepts. */
  testPaymentMethods: string[]
}

interface Rendered {
  body: string
  etag: string
}

const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * The discovery documents and pages at the host root (spec part 1): public, outside the API's
 * envelope, each rendered once per catalog version and answered with its ETag.
 */
export function discoveryRoutes(d: DiscoveryDeps) {
  const { server, sites, archives } = d.config
  const brand = { name: d.config.brand.name, contactEmail: d.config.brand.contactEmail || `hostmaster@${new URL(server.siteUrl).hostname}` }
  let protocolVersions: readonly string[] | undefined
  // The catalog's JSON is one string per catalog version (PlansService.listJson): the renders
  // are kept while it is the same string.
  let catalog = ''
  let rendered = new Map<string, Rendered>()
  const facts = (): DiscoveryFacts => ({
    siteUrl: server.siteUrl, baseUrl: server.baseUrl, brand, version: d.status.version, testMode: d.status.testMode,
    region: d.status.region, provider: d.status.provider, sitesDomain: sites.domain, backupsKept: archives.backupsKept,
    plans: d.plans.list(), testPaymentMethods: d.testPaymentMethods,
  })
  const render = (name: string, build: (f: DiscoveryFacts) => string): Rendered => {
    const version = d.plans.listJson()
    if (version !== catalog) {
      catalog = version
      rendered = new Map()
    }
    let r = rendered.get(name)
    if (!r) {
      const body = build(facts())
      rendered.set(name, (r = { body, etag: `"${Bun.hash(body).toString(36)}"` }))
    }
    return r
  }
  const answer = (request: Request, r: Rendered, type: string, extra: Record<string, string> = {}) => {
    const headers = { 'content-type': type, 'cache-control': DISCOVERY_CACHE_CONTROL, etag: r.etag, 'access-control-allow-origin': '*', ...extra }
    if (notModified(request.headers.get('if-none-match'), r.etag)) return new Response(null, { status: 304, headers })
    return new Response(r.body, { headers })
  }
  const json = (name: string, build: (f: DiscoveryFacts) => unknown) => ({ request }: { request: Request }) =>
    answer(request, render(name, (f) => `${JSON.stringify(build(f), null, 2)}\n`), JSON_TYPE)
  const page = (name: string, build: (f: DiscoveryFacts) => string) => ({ request }: { request: Request }) =>
    answer(request, render(name, build), 'text/html; charset=utf-8', { 'content-security-policy': PAGE_CSP, 'x-content-type-options': 'nosniff' })
  const hidden = { public: true, detail: { hide: true } } as const

  return new Elysia({ name: 'discovery-routes' })
    .get('/.well-known/acp.json', json('acp', acpDocument), hidden)
    .get('/.well-known/mcp.json', async ({ request }) => {
      protocolVersions ??= (await import('@modelcontextprotocol/sdk/types.js')).SUPPORTED_PROTOCOL_VERSIONS
      const versions = protocolVersions
      return json('mcp', (f) => mcpServerCard(f, d.tools(), versions))({ request })
    }, hidden)
    .get('/.well-known/ai-plugin.json', json('ai-plugin', aiPluginManifest), hidden)
    .get('/api/pricing.json', json('pricing', pricingDocument), hidden)
    .get('/llms.txt', ({ request }) => answer(request, render('llms', llmsTxt), 'text/plain; charset=utf-8'), hidden)
    .get('/for-agents', page('for-agents', forAgentsPage), hidden)
    .get('/agent-native/', page('agent-native', agentNativePage), hidden)
    .get('/logo.svg', ({ request }) => answer(request, render('logo', () => LOGO_SVG), 'image/svg+xml', { 'content-security-policy': "default-src 'none'" }), hidden)
}

/** RFC 9110 13.1.2: `*` or any listed tag (weak or strong) matches. */
function notModified(header: string | null, etag: string): boolean {
  if (!header) return false
  return header.split(',').some((t) => {
    const tag = t.trim()
    return tag === '*' || tag === etag || tag === `W/${etag}`
  })
}
