/**
 * The discovery documents an agent reads before its first API call (spec part 1, design.md
 * Discovery and MCP). Each is a pure function of `DiscoveryFacts`, which the routes build from the
 * live config and catalog, so a plan added with `berth plans add` is in every document at once.
 */
import type { Plan } from '../../domain/plans'
import { CAPABILITIES, EVENTS_RESOURCE, PROMPTS, RESOURCES, SERVER_TITLE, SITE_EVENTS_TEMPLATE, SITE_TEMPLATE } from '../mcp/catalog'
import type { ToolDef } from '../mcp/tools'

export interface DiscoveryFacts {
  siteUrl: string
  baseUrl: string
  brand: { name: string; contactEmail: string }
  version: string
  /** True while no real money moves (the built-in processor). */
  testMode: boolean
  region: string
  provider: string
  /** Sites are served at `{slug}.{sitesDomain}`. */
  sitesDomain: string
  backupsKept: number
  /** The plans on sale, in catalog order (deprecated ones left out). */
  plans: Plan[]
  /** Payment-method ids that work with `processor_payment_method` in test mode. */
  testPaymentMethods: string[]
}

/** Where each document and entry point lives, from `site_url` and `base_url`. */
export function linksOf(f: Pick<DiscoveryFacts, 'siteUrl' | 'baseUrl'>) {
  return {
    acp: `${f.siteUrl}/.well-known/acp.json`,
    mcpCard: `${f.siteUrl}/.well-known/mcp.json`,
    aiPlugin: `${f.siteUrl}/.well-known/ai-plugin.json`,
    pricing: `${f.siteUrl}/api/pricing.json`,
    llms: `${f.siteUrl}/llms.txt`,
    forAgents: `${f.siteUrl}/for-agents`,
    agentNative: `${f.siteUrl}/agent-native/`,
    logo: `${f.siteUrl}/logo.svg`,
    mcp: `${f.siteUrl}/mcp/`,
    openapi: `${f.baseUrl}/openapi.json`,
    reference: `${f.baseUrl}/docs/`,
    plans: `${f.baseUrl}/plans/`,
    register: `${f.baseUrl}/auth/register/`,
    checkouts: `${f.baseUrl}/acp/checkouts/`,
    sites: `${f.baseUrl}/sites/`,
  }
}

/** ACP's first version, whose checkout flow (create, update, complete, cancel) Berth's follows. */
const ACP_VERSION = '2025-09-29'

/**
 * `/.well-known/acp.json`: ACP's discovery document (protocol, api_base_url, transports,
 * capabilities), plus what an agent needs to buy without guessing: the checkout endpoints (Berth's
 * paths are the hosting API's, not ACP's `/checkout_sessions`), the SKUs with their prices, the
 * payment methods and whether this is test mode.
 */
export function acpDocument(f: DiscoveryFacts) {
  const links = linksOf(f)
  return {
    protocol: { name: 'acp', version: ACP_VERSION, supported_versions: [ACP_VERSION], documentation_url: links.forAgents },
    api_base_url: f.baseUrl,
    transports: ['rest', 'mcp'],
    capabilities: { services: ['checkout'], supported_currencies: ['cad'], supported_locales: ['en'] },
    test_mode: f.testMode,
    checkout: {
      create: { method: 'POST', url: links.checkouts, body: { sku: 'one of products[].sku' }, auth: 'none; send a bearer key to buy for an existing account' },
      get: { method: 'GET', url: `${links.checkouts}{checkout_id}/` },
      update: { method: 'POST', url: `${links.checkouts}{checkout_id}/update/`, body: { requested_slug: 'the site name', buyer_email: 'optional' } },
      complete: { method: 'POST', url: `${links.checkouts}{checkout_id}/complete/`, body: { payment_method: 'processor_payment_method or processor_checkout', payment_method_id: 'for processor_payment_method' } },
      cancel: { method: 'POST', url: `${links.checkouts}{checkout_id}/cancel/` },
      checkout_secret: 'Every call after create sends the checkout_secret from create: query ?checkout_secret= or header X-Checkout-Secret.',
    },
    payment_methods: [
      {
        type: 'processor_payment_method',
        description: 'Charge a payment method id at once: complete answers 201 with the API key and the site provisioning.',
        ...(f.testMode ? { test_payment_method_ids: f.testPaymentMethods } : {}),
      },
      { type: 'processor_checkout', description: 'complete answers 200 with processor_checkout_url, a payment page for a person; poll the checkout until it is completed.' },
    ],
    products: f.plans.flatMap((p) => prices(p).map((price) => ({ sku: price.sku, plan: p.slug, name: p.name, period: price.period, amount: price.amount, currency: 'CAD' }))),
    links: { pricing: links.pricing, openapi: links.openapi, mcp: links.mcp, llms_txt: links.llms },
  }
}

/** `/api/pricing.json`: every SKU on sale and its price, plan by plan, from the live catalog. */
export function pricingDocument(f: DiscoveryFacts) {
  return {
    currency: 'CAD',
    test_mode: f.testMode,
    checkout_url: linksOf(f).checkouts,
    plans: f.plans.map((p) => ({
      slug: p.slug,
      name: p.name,
      track: p.track,
      hosting_type: p.hosting_type,
      features: p.features,
      prices: prices(p).map(({ sku, period, amount }) => ({ sku, period, amount, amount_cents: Math.round(amount * 100), currency: 'CAD' })),
      details: `${f.baseUrl}/plans/${p.slug}/`,
    })),
  }
}

/**
 * `/.well-known/mcp.json`: an MCP server card (SEP-2127): where to connect, with which protocol
 * versions and auth, and the tools, resources and prompts a session will list.
 */
export function mcpServerCard(f: DiscoveryFacts, tools: ToolDef[], protocolVersions: readonly string[]) {
  const links = linksOf(f)
  return {
    $schema: 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json',
    name: `${reverseDns(new URL(f.siteUrl).hostname)}/berth`,
    version: f.version,
    title: `${f.brand.name}: ${SERVER_TITLE}`,
    description: `Web hosting for agents: register, buy a site with an ACP checkout and run it (files, deploys, logs, SSH, snapshots) through one tool per REST operation.${f.testMode ? ' Test mode: no real money moves.' : ''}`,
    websiteUrl: links.agentNative,
    icons: [{ src: links.logo, mimeType: 'image/svg+xml', sizes: ['any'] }],
    remotes: [
      {
        type: 'streamable-http',
        url: links.mcp,
        supportedProtocolVersions: [...protocolVersions],
        headers: [{ name: 'Authorization', description: 'Bearer <API key>, from the register tool (or POST /auth/register/). list_plans, register and the checkout tools work without one.', isRequired: false, isSecret: true }],
        authentication: { required: false, schemes: ['bearer'] },
      },
    ],
    capabilities: CAPABILITIES,
    resources: [...RESOURCES.map(({ tool: _t, args: _a, ...r }) => r), EVENTS_RESOURCE, SITE_TEMPLATE, SITE_EVENTS_TEMPLATE],
    prompts: PROMPTS.map(({ text: _t, ...p }) => p),
    tools: tools.map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  }
}

/** `/.well-known/ai-plugin.json`: the legacy plugin manifest, pointing at the OpenAPI document. */
export function aiPluginManifest(f: DiscoveryFacts) {
  const links = linksOf(f)
  return {
    schema_version: 'v1',
    name_for_human: f.brand.name.slice(0, 20),
    name_for_model: modelName(f.brand.name),
    description_for_human: 'Buy web hosting and run sites: files, deploys, logs, SSH and snapshots.',
    description_for_model: `Web hosting for agents at ${f.siteUrl}. List plans (GET /plans/), register for an API key (POST /auth/register/), buy a site with an ACP checkout (POST /acp/checkouts/, then update with requested_slug, then complete with payment_method processor_payment_method${f.testMode ? ' and payment_method_id pm_card_visa, test mode' : ''}), poll GET /sites/{slug}/ until active, then manage files, deploys, logs and snapshots. Send the key as "Authorization: Bearer <key>". Errors carry code, message and param and say what to do next. Prices in CAD.`,
    auth: { type: 'user_http', authorization_type: 'bearer' },
    api: { type: 'openapi', url: links.openapi, is_user_authenticated: false },
    logo_url: links.logo,
    contact_email: f.brand.contactEmail,
    legal_info_url: `${links.agentNative}#terms`,
  }
}

/** `/llms.txt` in the llmstxt.org format: title, summary, details, then link lists. */
export function llmsTxt(f: DiscoveryFacts): string {
  const l = linksOf(f)
  const plan = (p: Plan) =>
    `- ${md(p.name)} (\`${p.slug}\`, ${p.hosting_type}, ${p.track === 'agency' ? `up to ${p.features.max_sites} sites` : 'one site'}): ${money(p.price.monthly)} CAD a month (SKU \`${p.skus.monthly}\`) or ${money(p.price.annual)} CAD a year (SKU \`${p.skus.annual}\`); ${p.features.memory_mb} MB memory, ${p.features.disk_gb} GB disk${p.features.ssh ? ', SSH and snapshots' : ''}.`
  return `# ${md(f.brand.name)}

> ${md(f.brand.name)} sells and runs web hosting for AI agents. An agent registers, buys a plan through an ACP checkout and gets a running site that it manages over HTTP/JSON (${f.baseUrl}) or MCP (${l.mcp}), with no human step.${f.testMode ? ' This server is in test mode: no real money moves.' : ''}

Every answer is JSON: \`{"ok": true, "data": ..., "meta": {"request_id": ...}}\` on success, \`{"ok": false, "error": {"code", "message", "param"}}\` otherwise, and each error's message says what to do next. Send the API key as \`Authorization: Bearer <key>\`. Prices are in CAD. Region: ${md(f.region)}; provider: ${md(f.provider)}.

The flow, by REST (each step is also an MCP tool, named in brackets):

1. \`GET ${l.plans}\` (list_plans): pick a plan and its SKU.
2. \`POST ${l.register}\` (register): an API key, shown once.
3. \`POST ${l.checkouts}\` with \`{"sku": "..."}\` (create_checkout): keep \`id\` and \`checkout_secret\`.
4. \`POST ${l.checkouts}{id}/update/?checkout_secret=...\` with \`{"requested_slug": "my-site"}\` (update_checkout).
5. \`POST ${l.checkouts}{id}/complete/?checkout_secret=...\` with \`{"payment_method": "processor_payment_method", "payment_method_id": "${f.testMode ? 'pm_card_visa' : '<your payment method>'}"}\` (complete_checkout).
6. \`GET ${l.sites}my-site/\` (get_site) until \`status\` is \`active\`; then write files, deploy, read logs.

## Plans

${f.plans.map(plan).join('\n')}

## Docs

- [For agents](${l.forAgents}): the flow above with the exact requests and answers
- [OpenAPI document](${l.openapi}): every route, schema and error answer
- [API reference](${l.reference}): the OpenAPI document, readable
- [MCP server card](${l.mcpCard}): the MCP endpoint, its auth and its tools
- [ACP discovery](${l.acp}): checkout endpoints, SKUs, payment methods, test mode
- [Pricing](${l.pricing}): every SKU and price

## Optional

- [Agent-native hosting](${l.agentNative}): what a site comes with, for people and agents
- [Plugin manifest](${l.aiPlugin}): the legacy ai-plugin.json
`
}

/** A plan's SKUs with their period and price. */
export function prices(p: Plan) {
  return [
    { sku: p.skus.monthly, period: 'monthly' as const, amount: p.price.monthly },
    { sku: p.skus.annual, period: 'annual' as const, amount: p.price.annual },
  ]
}

/** A price as text with two decimals. */
export const money = (amount: number) => amount.toFixed(2)

/** Text safe inside Markdown: the characters that would start markup are backslash-escaped. */
function md(text: string): string {
  return text.replace(/[\\`*_[\]<>#|]/g, (c) => `\\${c}`)
}

/** `api.example.com` → `com.example.api` (the server card's reverse-DNS namespace). */
function reverseDns(host: string): string {
  return /^[\d.]+$|:/.test(host) ? host.replace(/[^a-z0-9]/gi, '-') : host.split('.').reverse().join('.')
}

/** The manifest's name_for_model: letters, digits and underscores, at most 64. */
function modelName(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 64) || 'berth'
}
