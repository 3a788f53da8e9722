import type { Logger } from '../../lib/logger'
import { INSTRUCTIONS } from './catalog'
import { errorResult, requestFor, resultJsonOf, ToolInputError, toolsFromOpenApi, type ToolDef, type ToolResult } from './tools'

/** What the MCP door needs: the REST app to dispatch to, its document, and who the caller is. */
export interface McpDeps {
  /** Handles one REST request in-process (the Elysia app's `handle`). */
  dispatch(request: Request): Promise<Response>
  /** The OpenAPI document of the REST door (tools are made from it). */
  openapi(): Record<string, any>
  /**
   * Marks a tool call's internal request as made for the MCP HTTP request `outer` (whose client
   * address the rate limits count, looked up only if a route needs it) and as coming from MCP
   * (its messages name tools).
   */
  tag(request: Request, outer: Request): void
  version: string
  siteUrl: string
  log: Logger
}

const API_PREFIX = '/api/v1'

/** Who calls a tool: the key of the MCP HTTP request that carries the call, and that request. */
export interface Caller {
  authorization?: string
  via: Request
}
/** A session unused for this long is closed; its client starts a new one (initialize again). */
const SESSION_IDLE_MS = 30 * 60_000
const MAX_SESSIONS = 10_000

interface Session {
  transport: import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js').WebStandardStreamableHTTPServerTransport
  lastSeen: number
}


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

  /** Runs one tool as its REST route, with the caller's key and address; the result as JSON text. */
  const callJson = async (name: string, args: Record<string, unknown>, auth: Caller): Promise<string> => {
    const tool = catalog().byName.get(name)
    if (!tool) return JSON.stringify(errorResult('NOT_FOUND', `No tool '${name}'; tools/list shows them all.`, 'name'))
    let request: Request
    try {
      request = requestFor(tool, args, origin, API_PREFIX, auth.authorization ? { authorization: auth.authorization } : {})
    } catch (err) {
      if (err instanceof ToolInputError) return JSON.stringify(errorResult('VALIDATION_ERROR', err.message, err.param))
      throw err
    }
    deps.tag(request, auth.via)
    return resultJsonOf(await deps.dispatch(request))
  }
  const call = async (name: string, args: Record<string, unknown>, auth: Caller): Promise<ToolResult> =>
    JSON.parse(await callJson(name, args, auth)) as ToolResult

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
    async handle(request: Request): Promise<Response> {
      const refused = rebinding(request, allowedHosts)
      if (refused) return jsonRpcError(403, -32000, refused)
      sdk ??= import('./sdk')
      const { newTransport, newServer } = await sdk
      const caller: Caller = { authorization: request.headers.get('authorization') ?? undefined, via: request }
      const authInfo = { token: '', clientId: 'mcp', scopes: [], extra: caller as unknown as Record<string, unknown> }
      const id = request.headers.get('mcp-session-id')
      const known = id ? sessions.get(id) : undefined
      if (known) {
        known.lastSeen = Date.now()
        if (request.method === 'POST' && fastEligible(request)) {
          // The hot path: one tools/call in a live session, answered without the SDK's
          // per-message machinery (about 90 µs a call here, three times the REST route's whole
          // cost: bench/mcp.ts). Anything else goes to the SDK, with the body already read.
          const text = await request.text()
          const fast = await fastToolCall(text, known, callJson, caller)
          if (fast) return fast
          const parsed = parseOrUndefined(text)
          // Unparseable: the SDK reads the body itself and answers its parse error.
          if (parsed === undefined) return known.transport.handleRequest(new Request(request.url, { method: 'POST', headers: request.headers, body: text }), { authInfo })
          return known.transport.handleRequest(request, { authInfo, parsedBody: parsed })
        }
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
/** The protocol versions the SDK accepts in MCP-Protocol-Version (it answers 400 to others). */
const PROTOCOL_VERSIONS = new Set(['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'])

/** A POST the SDK would accept as is: JSON in, both reply types accepted, a known protocol version. */
function fastEligible(request: Request): boolean {
  const accept = request.headers.get('accept') ?? ''
  const version = request.headers.get('mcp-protocol-version')
  return (request.headers.get('content-type') ?? '').includes('application/json') && accept.includes('application/json') && accept.includes('text/event-stream') &&
    (version === null || PROTOCOL_VERSIONS.has(version)) && request.headers.get('last-event-id') === null
}

/**
 * Answers a single `tools/call` request (no progress token asked) as the SDK's JSON reply mode
 * would: `{jsonrpc, id, result}` with the session header. Null for anything else (batches,
 * notifications, other methods, malformed messages), which the SDK handles.
 */
async function fastToolCall(text: string, session: Session, call: (name: string, args: Record<string, unknown>, caller: Caller) => Promise<string>, caller: Caller): Promise<Response | null> {
  const message = parseOrUndefined(text) as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown; _meta?: { progressToken?: unknown } } } | undefined
  if (!message || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0' || message.method !== 'tools/call') return null
  const { id, params } = message
  if ((typeof id !== 'string' && typeof id !== 'number') || typeof params !== 'object' || params === null || typeof params.name !== 'string') return null
  const args = params.arguments
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) return null
  if (params._meta?.progressToken !== undefined || !session.transport.sessionId) return null
  const result = await call(params.name, (args ?? {}) as Record<string, unknown>, caller)
  return new Response(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`, {
    status: 200,
    headers: { 'content-type': 'application/json', 'mcp-session-id': session.transport.sessionId },
  })
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

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
