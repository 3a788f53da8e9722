/**
 * The MCP SDK's side of the door, loaded on the first /mcp request (not at start-up: the SDK and
 * its schema library cost start-up time, as dockerode did).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  CallToolRequestSchema, CompleteRequestSchema, GetPromptRequestSchema, ListPromptsRequestSchema, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema, McpError, ErrorCode, ReadResourceRequestSchema, SetLevelRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import type { Logger } from '../../lib/logger'
import { SessionEventStore } from './event-store'
import type { ToolDef, ToolResult } from './tools'

import type { Caller } from './server'

export function newTransport(opts: { onsessioninitialized(id: string): void; onsessionclosed(id: string): void }) {
  return new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: () => crypto.randomUUID(),
    // A tool call's answer is one JSON reply: every operation answers at once (slow work runs as
    // jobs the agent polls), so a stream per call would only cost time. The GET stream for
    // server messages stays SSE and resumable: events carry ids, and a client that lost it
    // reconnects with Last-Event-ID after `retry` ms.
    enableJsonResponse: true,
    eventStore: new SessionEventStore(),
    retryInterval: 1_000,
    onsessioninitialized: opts.onsessioninitialized,
    onsessionclosed: opts.onsessionclosed,
  })
}

const RESOURCES = [
  { uri: 'berth://plans', name: 'plans', title: 'Hosting plans', description: 'The plans on sale, with prices in CAD, limits, features and SKUs (list_plans).', mimeType: 'application/json', tool: 'list_plans', args: {} },
  { uri: 'berth://sites', name: 'sites', title: 'Your sites', description: "The caller's sites with status, plan and URL (list_sites; needs a key).", mimeType: 'application/json', tool: 'list_sites', args: {} },
]

const PROMPTS = [
  {
    name: 'buy_a_site',
    title: 'Buy a hosting site',
    description: 'Walks through registering, choosing a plan, checking out and waiting for the site to run.',
    arguments: [
      { name: 'slug', description: 'The site name you want (3 to 50 lowercase letters, digits and hyphens).', required: true },
      { name: 'plan', description: 'A plan slug from list_plans (default: starter).', required: false },
    ],
    text: (a: Record<string, string>) => `Buy a Berth hosting site named "${a.slug}" on the ${a.plan || 'starter'} plan, monthly.
1. If you have no API key: call register, keep data.api_key, and send it as "Authorization: Bearer <key>" from now on.
2. Call list_plans and pick the SKU of the plan (skus.monthly).
3. Call create_checkout with that sku; keep id and checkout_secret.
4. Call update_checkout with checkout_id, checkout_secret and requested_slug "${a.slug}".
5. Call complete_checkout with checkout_id, checkout_secret, payment_method "processor_payment_method" and payment_method_id (pm_card_visa works in test mode).
6. Poll get_site with tenant_slug "${a.slug}" until status is "active"; its url is the site.`,
  },
  {
    name: 'deploy_to_site',
    title: 'Put content on a site',
    description: "Writes a page into a site's web root, deploys, and checks the result in the logs.",
    arguments: [{ name: 'tenant_slug', description: 'The slug of one of your sites (list_sites).', required: true }],
    text: (a: Record<string, string>) => `Publish content on the site "${a.tenant_slug}".
1. Call write_file with tenant_slug "${a.tenant_slug}", path "public/index.html" and the page's HTML as content (upload_file takes base64 for binary files).
2. Call deploy_site with tenant_slug "${a.tenant_slug}"; poll get_deployment until its status is succeeded or failed.
3. Open the site's url (get_site) to check the page, then call get_site_logs with type "access" to see the request, or "error" if something failed.`,
  },
]

/** One MCP server for one session: tools, resources and prompts, each backed by the REST routes. */
export function newServer(d: { name: string; version: string; instructions: string; catalog(): ToolDef[]; call(name: string, args: Record<string, unknown>, caller: Caller): Promise<ToolResult>; log: Logger }) {
  const server = new Server(
    { name: d.name, title: 'Berth hosting', version: d.version },
    { capabilities: { tools: { listChanged: false }, resources: { listChanged: false }, prompts: { listChanged: false }, logging: {}, completions: {} }, instructions: d.instructions },
  )
  const callerOf = (extra: { authInfo?: { extra?: Record<string, unknown> } }): Caller => extra.authInfo!.extra as unknown as Caller

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: d.catalog().map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  }))
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const result = await d.call(req.params.name, (req.params.arguments ?? {}) as Record<string, unknown>, callerOf(extra))
    return result as never
  })

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: RESOURCES.map(({ tool: _t, args: _a, ...r }) => r),
  }))
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: 'berth://sites/{tenant_slug}', name: 'site', title: 'One of your sites', description: 'A site by its slug (get_site; needs a key).', mimeType: 'application/json' }],
  }))
  server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
    const uri = req.params.uri
    const fixed = RESOURCES.find((r) => r.uri === uri)
    const site = /^berth:\/\/sites\/([a-z0-9-]+)$/.exec(uri)
    const [tool, args] = fixed ? [fixed.tool, fixed.args] : site ? ['get_site', { tenant_slug: site[1]! }] : [null, null]
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `No resource ${uri}; resources/list and resources/templates/list show them.`)
    const result = await d.call(tool, args, callerOf(extra))
    const text = result.content[0]?.text ?? ''
    if (result.isError) throw new McpError(ErrorCode.InvalidParams, `${uri}: ${text}`)
    return { contents: [{ uri, mimeType: 'application/json', text }] }
  })

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({
    prompts: PROMPTS.map(({ text: _t, ...p }) => p),
  }))
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const prompt = PROMPTS.find((p) => p.name === req.params.name)
    if (!prompt) throw new McpError(ErrorCode.InvalidParams, `No prompt '${req.params.name}'; prompts/list shows them.`)
    const args = (req.params.arguments ?? {}) as Record<string, string>
    for (const a of prompt.arguments) if (a.required && !args[a.name]) throw new McpError(ErrorCode.InvalidParams, `Prompt ${prompt.name} needs the argument '${a.name}': ${a.description}`)
    return { description: prompt.description, messages: [{ role: 'user' as const, content: { type: 'text' as const, text: prompt.text(args) } }] }
  })

  // Completion of prompt arguments and of the site template's slug: plans from the catalog, the
  // caller's sites from their key.
  server.setRequestHandler(CompleteRequestSchema, async (req, extra) => {
    const { ref, argument } = req.params
    const wanted = argument.name === 'plan' ? 'plans' : argument.name === 'slug' && ref.type === 'ref/prompt' ? null : argument.name === 'tenant_slug' ? 'sites' : null
    let values: string[] = []
    if (wanted) {
      const result = await d.call(wanted === 'plans' ? 'list_plans' : 'list_sites', {}, callerOf(extra))
      const items = (result.structuredContent?.items ?? []) as { slug: string }[]
      values = result.isError ? [] : items.map((i) => i.slug).filter((s) => s.startsWith(argument.value)).slice(0, 100)
    }
    return { completion: { values, total: values.length, hasMore: false } }
  })

  server.setRequestHandler(SetLevelRequestSchema, async () => ({}))
  server.onerror = (err) => d.log.warn('mcp session error', { error: err.message })
  return server
}
