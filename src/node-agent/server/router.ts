import { problemOf, matchRoute, type RequestProblem } from '../contract/check'
import { AGENT_ROUTES, JSON_BODY_BYTES, type AgentAnswer, type AgentRoute, type AgentRouteName, type CheckedRequest } from '../contract/routes'

/**
 * The agent's router, made from the contract (contract/routes.ts): the route is found by its
 * method and path, its params, query, headers and JSON body are checked against the route's
 * schemas (a failure is a 400 naming the field), and its handler gets them typed. An unknown
 * path is a 404, a known path with another method a 405.
 */

/** One handler per route of the contract, each typed by its route. */
export type AgentHandlers = { [K in AgentRouteName]: (req: CheckedRequest<K>) => Promise<AgentAnswer<K> | Response> }

/** The agent's error answer: the API's envelope, `{ error: { code, message, param? } }`. */
export function agentError(status: number, code: string, message: string, param?: string): Response {
  return Response.json({ error: { code, message, ...(param ? { param } : {}) } }, { status })
}

/**
 * A request the contract refuses: 400 `bad_request`, with the field. `kind: 'error'` is the home
 * wire's (contract/home-wire.ts), so the remote home throws it as the error it is.
 */
export function refused(problem: RequestProblem): Response {
  return Response.json({ error: { kind: 'error', code: 'bad_request', message: `${problem.message}.`, param: problem.param } }, { status: 400 })
}

/** Answers one request of the agent's API; the caller checked the client certificate and the remote address already. */
export async function routeAgentRequest(handlers: AgentHandlers, request: Request): Promise<Response> {
  const url = new URL(request.url)
  const found = matchRoute(request.method, url.pathname)
  if (!found) return agentError(404, 'not_found', `No route ${request.method} ${url.pathname} on this agent.`)
  if ('allowed' in found) {
    const res = agentError(405, 'method_not_allowed', `${url.pathname} takes ${found.allowed.join(' or ')}.`)
    res.headers.set('allow', found.allowed.join(', '))
    return res
  }
  const { name, params } = found.match
  const route: AgentRoute = AGENT_ROUTES[name]
  const query = Object.fromEntries(url.searchParams)
  const headers: Record<string, string> = {}
  for (const key of Object.keys(route.headers.properties)) {
    const value = request.headers.get(key)
    if (value !== null) headers[key] = value
  }
  const problem = problemOf(route.params, params, 'params') ?? problemOf(route.query, query, 'query') ?? problemOf(route.headers, headers, 'headers')
  if (problem) return refused(problem)
  let body: unknown
  if (route.body.kind === 'json') {
    const read = await jsonBody(request, route.body.maxBytes ?? JSON_BODY_BYTES)
    if ('problem' in read) return refused(read.problem)
    const bad = problemOf(route.body.schema, read.value, 'body')
    if (bad) return refused(bad)
    body = read.value
  } else if (route.body.kind === 'stream') {
    body = request.body
  }
  const handler = handlers[name] as (req: CheckedRequest<AgentRouteName>) => Promise<unknown>
  const answer = await handler({ params, query, headers, body, request } as CheckedRequest<AgentRouteName>)
  if (answer instanceof Response) return answer
  return route.answer.kind === 'json' ? Response.json(answer) : new Response(null, { status: 204 })
}

/** The request's JSON body, read up to `maxBytes` (declared or streamed). */
async function jsonBody(request: Request, maxBytes: number): Promise<{ value: unknown } | { problem: RequestProblem }> {
  const tooBig = { problem: { param: 'body', message: `the body is at most ${maxBytes} bytes` } }
  if (Number(request.headers.get('content-length') ?? 0) > maxBytes) return tooBig
  const chunks: Uint8Array[] = []
  let size = 0
  if (request.body) {
    for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
      size += chunk.length
      if (size > maxBytes) return tooBig
      chunks.push(chunk)
    }
  }
  try {
    return { value: JSON.parse(Buffer.concat(chunks).toString('utf8')) }
  } catch {
    return { problem: { param: 'body', message: 'the body must be JSON, as the route\'s contract says (contract/routes.ts)' } }
  }
}
