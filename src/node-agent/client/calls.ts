import type { ClusterNode, NodeLink } from '../../drivers/cluster/types'
import { pathOf, problemOf } from '../contract/check'
import { AGENT_ROUTES, type AgentAnswer, type AgentRequest, type AgentRoute, type AgentRouteName } from '../contract/routes'

/**
 * The control plane's client of the node agent, made from the contract (contract/routes.ts) as
 * the router is: a route's request is built from its name and its typed parts (no path is
 * written by a caller), checked against the route's schemas before anything is sent (the agent
 * would refuse it with a 400), and sent through the NodeLink (AgentLink: mutual TLS, the node's
 * certificate pinned). `callAgent` also reads the answer: the route's JSON, checked against its
 * schema, or the Response of a stream.
 *
 * @example
 * const info = await callAgent(link, node, 'info', {})
 * const { port } = await callAgent(link, node, 'openForward', { params: { slug }, body: { address, port: 80 } })
 */

/** A request the contract refuses: never sent. `param` names the field. */
export class AgentRequestRefusedError extends Error {
  constructor(readonly route: AgentRouteName, readonly param: string, message: string) {
    super(message)
  }
}

/** The agent answered, but not with the route's success: its status, and its error's code when it sent one. */
export class AgentAnswerError extends Error {
  constructor(readonly route: AgentRouteName, readonly status: number, readonly code: string | null, message: string) {
    super(message)
  }
}

/** What a call may add: a signal that ends it. */
export interface CallOptions {
  signal?: AbortSignal
}

/** The path (with its query) and the fetch options of route `name`'s request; throws AgentRequestRefusedError for one the contract refuses. */
export function agentRequest<K extends AgentRouteName>(name: K, req: AgentRequest<K>, options: CallOptions = {}): { path: string; init: RequestInit } {
  const route: AgentRoute = AGENT_ROUTES[name]
  const parts = req as { params?: Record<string, string>; query?: Record<string, string | undefined>; headers?: Record<string, string | undefined>; body?: unknown }
  const query = Object.fromEntries(Object.entries(parts.query ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>
  const headers = Object.fromEntries(Object.entries(parts.headers ?? {}).filter(([, v]) => v !== undefined)) as Record<string, string>
  const problem = problemOf(route.params, parts.params ?? {}, 'params') ?? problemOf(route.query, query, 'query') ?? problemOf(route.headers, headers, 'headers')
    ?? (route.body.kind === 'json' ? problemOf(route.body.schema, parts.body, 'body') : null)
  if (problem) throw new AgentRequestRefusedError(name, problem.param, `The agent's ${name} route would refuse this request: ${problem.message}.`)
  const search = new URLSearchParams(query).toString()
  const init: RequestInit = { method: route.method, headers, ...(options.signal ? { signal: options.signal } : {}) }
  if (route.body.kind === 'json') {
    headers['content-type'] = 'application/json'
    init.body = JSON.stringify(parts.body)
  } else if (route.body.kind === 'stream') {
    headers['content-type'] = route.body.contentType
    init.body = parts.body as BodyInit
  }
  return { path: pathOf(route, parts.params) + (search ? `?${search}` : ''), init }
}

/** Sends route `name`'s request to the node's agent; the Response as it came (any status). */
export async function sendAgent<K extends AgentRouteName>(link: Pick<NodeLink, 'fetch'>, node: ClusterNode, name: K, req: AgentRequest<K>, options: CallOptions = {}): Promise<Response> {
  const { path, init } = agentRequest(name, req, options)
  return link.fetch(node, path, init)
}

/**
 * Calls route `name` of the node's agent: its JSON answer (checked against the contract),
 * nothing, or the Response carrying its stream. Throws AgentAnswerError for any other status,
 * and what the link throws (NodeRefusedError, NodeUnreachableError).
 */
export async function callAgent<K extends AgentRouteName>(link: Pick<NodeLink, 'fetch'>, node: ClusterNode, name: K, req: AgentRequest<K>, options: CallOptions = {}): Promise<AgentAnswer<K>> {
  const route: AgentRoute = AGENT_ROUTES[name]
  const res = await sendAgent(link, node, name, req, options)
  if (!res.ok) {
    const text = await res.text()
    let code: string | null = null
    try {
      code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null
    } catch {
      // not one of the agent's answers (a proxy in between)
    }
    throw new AgentAnswerError(name, res.status, code, `HTTP ${res.status}: ${text.slice(0, 300)}`)
  }
  if (route.answer.kind === 'stream') return res as AgentAnswer<K>
  if (route.answer.kind === 'none') {
    await res.body?.cancel()
    return undefined as AgentAnswer<K>
  }
  const answer: unknown = await res.json()
  const problem = problemOf(route.answer.schema, answer, 'body')
  if (problem) throw new AgentAnswerError(name, res.status, null, `The agent's answer to ${name} is not the contract's: ${problem.message}.`)
  return answer as AgentAnswer<K>
}

/** The client of every route, one method each, typed by the contract: `agentClient(link).info(node, {})`. */
export type AgentClient = { [K in AgentRouteName]: (node: ClusterNode, req: AgentRequest<K>, options?: CallOptions) => Promise<AgentAnswer<K>> }

export function agentClient(link: Pick<NodeLink, 'fetch'>): AgentClient {
  return Object.fromEntries(
    Object.keys(AGENT_ROUTES).map((name) => [name, (node: ClusterNode, req: never, options?: CallOptions) => callAgent(link, node, name as AgentRouteName, req, options)]),
  ) as unknown as AgentClient
}
