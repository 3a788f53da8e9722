import type { RateDecision } from '../../domain/rate-limits'
import type { Logger } from '../../lib/logger'
import { rateHeaders } from '../rate-limits/plugin'
import type { Caller } from './caller'
import { INSTRUCTIONS } from './catalog'
import { rebindingGuard, type LocalPorts } from './rebinding'
import type { EventsDoor } from './events'
import { SessionTable, type SessionLimits } from './sessions'
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
  /**
   * The key id of a valid bearer key (the Authorization header as sent), or null for none or an
   * invalid one: an `initialize` with a valid key opens a keyed session, any other an anonymous one.
   */
  keyOf(authorization: string | undefined): string | null
  /** Counts an `initialize` against its client address's limit (rate_limits.mcp_initialize). */
  admit(request: Request): RateDecision
  /** How many sessions of each kind are held, and for how long unused (config section mcp). */
  limits: SessionLimits
  /** The listeners' ports, for the loopback origins the rebinding check accepts. */
  localPorts(): LocalPorts
  version: string
  siteUrl: string
  log: Logger
  /** The event log's resources, read and subscribed to (events.ts); without it they are not offered. */
  events?: EventsDoor
}

const API_PREFIX = '/api/v1'

/** How often sessions unused for longer than their idle time are closed. */
const SWEEP_INTERVAL_MS = 30_000

type AuthInfo = import('@modelcontextprotocol/sdk/server/auth/types.js').AuthInfo
type Transport = import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js').WebStandardStreamableHTTPServerTransport

/**
 * MCP over Streamable HTTP at /mcp/ (and /mcp), in the same listener as the API, with the
 * official SDK's web-standard transport: one transport and server per session
 * (`Mcp-Session-Id`), JSON or SSE replies as the client accepts, DELETE ends a session. The
 * bearer key of each HTTP request is the caller of the tools it carries. Sessions are bounded
 * (sessions.ts): `initialize` is rate limited per client address (429) and refused when its pool
 * is full (503), both with Retry-After.
 */
export function createMcpHandler(deps: McpDeps) {
  const sessions = new SessionTable<Transport>(deps.limits)
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
  const rebinding = rebindingGuard(deps.siteUrl, deps.localPorts)

  /** Runs one tool as its REST route, with the caller's key and address; the result as JSON text. */
  const callJson = async (name: string, args: Record<string, unknown>, auth: Caller, signal?: AbortSignal): Promise<string> => {
    const tool = catalog().byName.get(name)
    if (!tool) return JSON.stringify(errorResult('NOT_FOUND', `No tool '${name}'; tools/list shows them all.`, 'name'))
    let request: Request
    try {
      request = requestFor(tool, args, origin, API_PREFIX, auth.authorization ? { authorization: auth.authorization } : {}, signal)
    } catch (err) {
      if (err instanceof ToolInputError) return JSON.stringify(errorResult('VALIDATION_ERROR', err.message, err.param))
      throw err
    }
    deps.tag(request, auth.via)
    return resultJsonOf(await deps.dispatch(request))
  }
  const call = async (name: string, args: Record<string, unknown>, auth: Caller, signal?: AbortSignal): Promise<ToolResult> =>
    JSON.parse(await callJson(name, args, auth, signal)) as ToolResult

  const timer = setInterval(() => sessions.sweep(), SWEEP_INTERVAL_MS)
  timer.unref?.()

  /** A new session for an `initialize` (or the SDK's error for anything else), within the limits. */
  const open = async (request: Request, authInfo: AuthInfo): Promise<Response> => {
    const decision = deps.admit(request)
    if (!decision.allowed) {
      return jsonRpcError(429, -32000, `Too many new MCP sessions from this address; retry in ${decision.resetSeconds} seconds, or keep using the session you have.`, 'RATE_LIMITED', { ...rateHeaders(decision), 'retry-after': String(decision.resetSeconds) })
    }
    const place = sessions.reserve(deps.keyOf(request.headers.get('authorization') ?? undefined))
    if ('retryAfterSeconds' in place) {
      return jsonRpcError(503, -32000, `Berth holds as many MCP sessions as it may; retry in ${place.retryAfterSeconds} seconds (sessions opened with an API key have room of their own).`, 'UNAVAILABLE', { 'retry-after': String(place.retryAfterSeconds) })
    }
    try {
      sdk ??= import('./sdk')
      const { newTransport, newServer } = await sdk
      const transport = newTransport({
        onsessioninitialized: (sessionId) => place.open(sessionId, transport),
        onsessionclosed: (sessionId) => sessions.remove(sessionId),
      })
      transport.onclose = () => {
        if (transport.sessionId) sessions.remove(transport.sessionId)
      }
      const server = newServer({ name: 'berth', version: deps.version, instructions: INSTRUCTIONS, catalog: () => catalog().tools, call, log: deps.log, events: deps.events })
      await server.connect(transport)
      return await transport.handleRequest(request, { authInfo })
    } finally {
      // Not an initialize, or one that failed: no session took the place.
      place.release()
    }
  }

  /** The hot path's calls under way, by session and JSON-RPC id: a notifications/cancelled for one ends it (wait_for_event's long poll). */
  const inFlight = new Map<string, AbortController>()

  return {
    /** The tools, for the discovery documents and tests. */
    tools: () => catalog().tools,
    call,
    async handle(request: Request): Promise<Response> {
      const refused = rebinding(request)
      if (refused) return jsonRpcError(403, -32000, refused)
      const caller: Caller = { authorization: request.headers.get('authorization') ?? undefined, via: request }
      const authInfo: AuthInfo = { token: '', clientId: 'mcp', scopes: [], extra: caller as unknown as Record<string, unknown> }
      const id = request.headers.get('mcp-session-id')
      const known = id ? sessions.touch(id) : undefined
      if (known) {
        if (request.method === 'POST' && fastEligible(request)) {
          // The hot path: one tools/call in a live session, answered without the SDK's
          // per-message machinery (about 90 µs a call here, three times the REST route's whole
          // cost: bench/mcp.ts). Anything else goes to the SDK, with the body already read.
          const text = await request.text()
          const fast = await fastToolCall(text, known, callJson, caller, request.signal, inFlight)
          if (fast) return fast
          const parsed = parseOrUndefined(text)
          // A cancellation of a call the hot path runs: the SDK does not know it, so it is ended here.
          const cancelled = cancelledRequest(parsed)
          if (cancelled !== undefined && known.sessionId) inFlight.get(`${known.sessionId}\n${cancelled}`)?.abort()
          // Unparseable: the SDK reads the body itself and answers its parse error.
          if (parsed === undefined) return known.handleRequest(new Request(request.url, { method: 'POST', headers: request.headers, body: text }), { authInfo })
          return known.handleRequest(request, { authInfo, parsedBody: parsed })
        }
        return known.handleRequest(request, { authInfo })
      }
      if (id) return jsonRpcError(404, -32001, 'Session not found; initialize a new session (POST an initialize request without Mcp-Session-Id).')
      if (request.method !== 'POST') return jsonRpcError(400, -32000, 'No Mcp-Session-Id; start with a POST of an initialize request.')
      return open(request, authInfo)
    },
    close() {
      clearInterval(timer)
      sessions.closeAll()
    },
  }
}

export type McpHandler = ReturnType<typeof createMcpHandler>

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
async function fastToolCall(
  text: string, transport: Transport, call: (name: string, args: Record<string, unknown>, caller: Caller, signal?: AbortSignal) => Promise<string>, caller: Caller,
  /** The HTTP request's: the client went away. */
  gone: AbortSignal, inFlight: Map<string, AbortController>,
): Promise<Response | null> {
  const message = parseOrUndefined(text) as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown; _meta?: { progressToken?: unknown } } } | undefined
  if (!message || typeof message !== 'object' || Array.isArray(message) || message.jsonrpc !== '2.0' || message.method !== 'tools/call') return null
  const { id, params } = message
  if ((typeof id !== 'string' && typeof id !== 'number') || typeof params !== 'object' || params === null || typeof params.name !== 'string') return null
  const args = params.arguments
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) return null
  if (params._meta?.progressToken !== undefined || !transport.sessionId) return null
  // Ended by the client's notifications/cancelled for this id, or by its going away.
  const key = `${transport.sessionId}\n${String(id)}`
  const ending = new AbortController()
  const end = () => ending.abort()
  gone.addEventListener('abort', end)
  inFlight.set(key, ending)
  let result: string
  try {
    result = await call(params.name, (args ?? {}) as Record<string, unknown>, caller, ending.signal)
  } finally {
    gone.removeEventListener('abort', end)
    if (inFlight.get(key) === ending) inFlight.delete(key)
  }
  return new Response(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":${result}}`, {
    status: 200,
    headers: { 'content-type': 'application/json', 'mcp-session-id': transport.sessionId },
  })
}

/** The request id a `notifications/cancelled` message names, else undefined. */
function cancelledRequest(message: unknown): string | undefined {
  const m = message as { method?: unknown; params?: { requestId?: unknown } } | undefined
  if (!m || typeof m !== 'object' || m.method !== 'notifications/cancelled') return undefined
  const id = m.params?.requestId
  return typeof id === 'string' || typeof id === 'number' ? String(id) : undefined
}

function parseOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * An HTTP-level refusal as the Streamable HTTP transport answers one: a JSON-RPC error with no id.
 * `apiCode` (the REST envelope's code for the same condition) goes in the error's `data`.
 */
function jsonRpcError(status: number, code: number, message: string, apiCode?: string, headers: Record<string, string> = {}): Response {
  const error = apiCode ? { code, message, data: { code: apiCode } } : { code, message }
  return new Response(JSON.stringify({ jsonrpc: '2.0', error, id: null }), { status, headers: { 'content-type': 'application/json', ...headers } })
}
