/**
 * The MCP SDK's side of the door, loaded on the first /mcp request (not at start-up: the SDK and
 * its schema library cost start-up time, as dockerode did).
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import {
  CallToolRequestSchema, CompleteRequestSchema, GetPromptRequestSchema, ListPromptsRequestSchema, ListResourcesRequestSchema, ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema, McpError, ErrorCode, ReadResourceRequestSchema, SetLevelRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js'
import type { Logger } from '../../lib/logger'
import { SessionEventStore } from './event-store'
import type { ToolDef, ToolResult } from './tools'
import type { Caller } from './caller'
import { CAPABILITIES, EVENTS_RESOURCE, PROMPTS, RESOURCES, SERVER_TITLE, SITE_EVENTS_TEMPLATE, SITE_TEMPLATE } from './catalog'
import { EventsRefusal, eventsSiteOf, type EventsDoor } from './events'

/**
 * The SDK's transport, releasing what it keeps of each answered JSON request. In JSON reply mode
 * the SDK (1.32) resolves a POST's answer but never deletes the request's entry in its stream
 * table, so every request a session sends through it (all but the fast tools/call) stays in
 * memory, with its Request, until the session ends (typescript-sdk issue 2559). After each
 * answer, entries whose requests are all answered (none left in the request-to-stream table) go.
 * Fields it does not find (a later SDK) leave it a no-op.
 */
class Transport extends WebStandardStreamableHTTPServerTransport {
  override async handleRequest(req: Request, options?: Parameters<WebStandardStreamableHTTPServerTransport['handleRequest']>[1]): Promise<Response> {
    const response = await super.handleRequest(req, options)
    releaseAnsweredStreams(this as unknown as SdkInternals)
    return response
  }
}

interface SdkInternals {
  _streamMapping?: Map<string, { resolveJson?: unknown }>
  _requestToStreamMapping?: Map<unknown, string>
}

function releaseAnsweredStreams(t: SdkInternals): void {
  const streams = t._streamMapping
  const pending = t._requestToStreamMapping
  if (!(streams instanceof Map) || !(pending instanceof Map)) return
  const waiting = new Set(pending.values())
  for (const [id, stream] of streams) if (stream.resolveJson && !waiting.has(id)) streams.delete(id)
}

export function newTransport(opts: { onsessioninitialized(id: string): void; onsessionclosed(id: string): void }) {
  return new Transport({
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

/**
 * One JSON Schema validator for every session's server. The SDK makes a fresh Ajv (with its
 * formats) per Server unless given one: about 11 KB of heap and 29 KB of resident memory a
 * session, most of a session's cost (issue 23), for a validator only elicitation uses, which
 * Berth never asks for.
 */
let validator: AjvJsonSchemaValidator | undefined

/** One MCP server for one session: tools, resources and prompts, each backed by the REST routes. */
export function newServer(d: { name: string; version: string; instructions: string; catalog(): ToolDef[]; call(name: string, args: Record<string, unknown>, caller: Caller, signal?: AbortSignal): Promise<ToolResult>; log: Logger; events?: EventsDoor }) {
  const server = new Server(
    { name: d.name, title: SERVER_TITLE, version: d.version },
    { capabilities: CAPABILITIES, instructions: d.instructions, jsonSchemaValidator: (validator ??= new AjvJsonSchemaValidator()) },
  )
  const callerOf = (extra: { authInfo?: { extra?: Record<string, unknown> } }): Caller => extra.authInfo!.extra as unknown as Caller

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: d.catalog().map((t) => ({ name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations })),
  }))
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    // The call's signal ends what the tool holds (wait_for_event's long poll) when the client cancels it or goes.
    const result = await d.call(req.params.name, (req.params.arguments ?? {}) as Record<string, unknown>, callerOf(extra), extra.signal)
    return result as never
  })

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: [...RESOURCES.map(({ tool: _t, args: _a, ...r }) => r), ...(d.events ? [EVENTS_RESOURCE] : [])],
  }))
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [SITE_TEMPLATE, ...(d.events ? [SITE_EVENTS_TEMPLATE] : [])],
  }))

  // The event log's resources (events.ts): read and subscribed to; a session's subscriptions end with it.
  const subscriptions = new Map<string, () => void>()
  const eventsOf = (uri: string) => {
    const target = d.events ? eventsSiteOf(uri) : null
    if (!target) throw new McpError(ErrorCode.InvalidParams, `No resource ${uri} to subscribe to; berth://events and berth://sites/{tenant_slug}/events can be.`)
    return { door: d.events!, site: target.site }
  }
  const refusedAs = <T>(uri: string, work: () => T): T => {
    try {
      return work()
    } catch (err) {
      if (err instanceof EventsRefusal) throw new McpError(ErrorCode.InvalidParams, `${uri}: ${err.message}`)
      throw err
    }
  }
  server.setRequestHandler(SubscribeRequestSchema, async (req, extra) => {
    const uri = req.params.uri
    const { door, site } = eventsOf(uri)
    if (!subscriptions.has(uri)) {
      subscriptions.set(uri, refusedAs(uri, () => door.subscribe(callerOf(extra), site, () => {
        void server.sendResourceUpdated({ uri }).catch((err: Error) => d.log.debug('mcp: a resource notification was not sent', { uri, error: err.message }))
      })))
    }
    return {}
  })
  server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    subscriptions.get(req.params.uri)?.()
    subscriptions.delete(req.params.uri)
    return {}
  })
  server.onclose = () => {
    for (const stop of subscriptions.values()) stop()
    subscriptions.clear()
  }

  server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
    const uri = req.params.uri
    const events = d.events ? eventsSiteOf(uri) : null
    if (events) return { contents: [{ uri, mimeType: 'application/json', text: refusedAs(uri, () => d.events!.read(callerOf(extra), events.site)) }] }
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
