import type { Logger } from '../../lib/logger'
import { errorResult, requestFor, resultOf, ToolInputError, toolsFromOpenApi, type ToolDef, type ToolResult } from './tools'

/** What the MCP door needs: the REST app to dispatch to, its document, and who the caller is. */
export interface McpDeps {
  /** Handles one REST request in-process (the Elysia app's `handle`). */
  dispatch(request: Request): Promise<Response>
  /** The OpenAPI document of the REST door (tools are made from it). */
  openapi(): Record<string, any>
  /** Marks an internal request as coming from a client address (rate limits) and from MCP (messages name tools). */
  tag(request: Request, clientAddress: string): void
  version: string
  siteUrl: string
  log: Logger
}

const API_PREFIX = '/api/v1'
/** A session unused for this long is closed; its client starts a new one (initialize again). */
const SESSION_IDLE_MS = 30 * 60_000
const MAX_SESSIONS = 10_000

interface Session {
  transport: import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js').WebStandardStreamableHTTPServerTransport
  lastSeen: number
}

const INSTRUCTIONS = `Berth sells and runs web hosting for agents. Flow: list_plans; register (gives an API key; send it as "Authorization: Bearer <key>" on the MCP HTTP requests); create_checkout with a SKU; update_checkout with requested_slug (and buyer_email); complete_checkout with payment_method "processor_payment_method" and payment_method_id (pm_card_visa in test mode); poll get_site until status is active; then write_file, deploy_site, get_site_logs and the other site tools. Every tool mirrors one REST route; errors come back with isError and the API's code, message and param, and say what to do next.`

/**
 * MCP over Streamable HTTP at /mcp/ (and /mcp), in the same listener as the API, with the
 * official SDK's web-standard transport: one transport and server per session
 * (`Mcp-Session-Id`), JSON or SSE replies as the client accepts, DELETE ends a session. The
 * bearer key of each HTTP request is the caller of the tools it carries.
 */
export function createMcpHandler(deps: McpDeps) {
  const sessions = new Map<string, Session>()
  let tools: ToolDef[] | undefined
  let byName: Map<string, ToolDef> | undefined
  let sdk: Promise<typeof import('./sdk')> | undefined
  const catalog = () => {
    if (!tools) {
      tools = toolsFromOpenApi(deps.openapi())
      byName = new Map(tools.map((t) => [t.name, t]))
    }
    return { tools, byName: byName! }
  }
  const origin = new URL(deps.siteUrl).origin
  const allowedHosts = new Set([new URL(deps.siteUrl).hostname.toLowerCase(), ...LOOPBACK_NAMES])

  /** Runs one tool as its REST route, with the caller's key and address. */
  const call = async (name: string, args: Record<string, unknown>, auth: { authorization?: string; client: string }): Promise<ToolResult> => {
    const tool = catalog().byName.get(name)
    if (!tool) return errorResult('NOT_FOUND', `No tool '${name}'; tools/list shows them all.`, 'name')
    let request: Request
    try {
      request = requestFor(tool, args, origin, API_PREFIX, auth.authorization ? { authorization: auth.authorization } : {})
    } catch (err) {
      if (err instanceof ToolInputError) return errorResult('VALIDATION_ERROR', err.message, err.param)
      throw err
    }
    deps.tag(request, auth.client)
    return resultOf(await deps.dispatch(request))
  }

  const sweep = () => {
    const now = Date.now()
    for (const [id, s] of sessions) if (now - s.lastSeen > SESSION_IDLE_MS) void s.transport.close().catch(() => {})
  }
  const timer = setInterval(sweep, 60_000)
  timer.unref?.()

  return {
    /** The tools, for the discovery documents and tests. */
    tools: () => catalog().tools,
    call,
    async handle(request: Request, clientAddress: string): Promise<Response> {
      const refused = rebinding(request, allowedHosts)
      if (refused) return jsonRpcError(403, -32000, refused)
      sdk ??= import('./sdk')
      const { newTransport, newServer } = await sdk
      const authInfo = { token: '', clientId: clientAddress, scopes: [], extra: { authorization: request.headers.get('authorization') ?? undefined, client: clientAddress } }
      const id = request.headers.get('mcp-session-id')
      const known = id ? sessions.get(id) : undefined
      if (known) {
        known.lastSeen = Date.now()
        return known.transport.handleRequest(request, { authInfo })
      }
      if (id) return jsonRpcError(404, -32001, 'Session not found; initialize a new session (POST an initialize request without Mcp-Session-Id).')
      if (request.method !== 'POST') return jsonRpcError(400, -32000, 'No Mcp-Session-Id; start with a POST of an initialize request.')
      if (sessions.size >= MAX_SESSIONS) sweep()
      const transport = newTransport({
        onsessioninitialized: (sessionId) => void sessions.set(sessionId, { transport, lastSeen: Date.now() }),
        onsessionclosed: (sessionId) => void sessions.delete(sessionId),
      })
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId)
      }
      const server = newServer({ name: 'berth', version: deps.version, instructions: INSTRUCTIONS, catalog: () => catalog().tools, call, log: deps.log })
      await server.connect(transport)
      return transport.handleRequest(request, { authInfo })
    },
    close() {
      clearInterval(timer)
      for (const s of sessions.values()) void s.transport.close().catch(() => {})
      sessions.clear()
    },
  }
}

export type McpHandler = ReturnType<typeof createMcpHandler>

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]']

/**
 * DNS-rebinding protection (MCP transports, Security Warning): a browser tricked into sending
 * requests to this server carries a foreign Host or Origin. Only the site URL's host and the
 * loopback names are accepted, in both headers (the Origin only when sent). Why not, or null.
 */
function rebinding(request: Request, allowed: ReadonlySet<string>): string | null {
  const host = hostnameOf(request.headers.get('host') ?? '')
  if (!allowed.has(host)) return `Host '${host}' is not this server's; use the address of site_url.`
  const originHeader = request.headers.get('origin')
  if (originHeader && originHeader !== 'null') {
    let originHost: string
    try {
      originHost = new URL(originHeader).hostname.toLowerCase()
    } catch {
      return 'The Origin header is not a URL.'
    }
    if (originHost.startsWith('[') === false && originHost.includes(':')) originHost = `[${originHost}]`
    if (!allowed.has(originHost)) return `Origin '${originHeader}' may not call this server.`
  } else if (originHeader === 'null') {
    return "Origin 'null' may not call this server."
  }
  return null
}

/** The host name of a Host header, lowercase, without its port ([::1] kept bracketed). */
function hostnameOf(header: string): string {
  const h = header.trim().toLowerCase()
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1)
  const colon = h.indexOf(':')
  return colon < 0 ? h : h.slice(0, colon)
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), { status, headers: { 'content-type': 'application/json' } })
}
