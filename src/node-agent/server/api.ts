import { isIpAddress } from '../../lib/ip'
import { parseFirewallPolicy } from '../../drivers/firewall/policy'
import type { FirewallCheck, SiteFirewallPolicy } from '../../drivers/firewall/types'
import type { AgentInfo } from '../../drivers/cluster/types'
import type { ForwardTarget, Forwards } from './forwards'

/**
 * One homes call (`/v1/homes/{volume}/{rest}`), answered by the remote-home handler
 * (drivers/files): `volume` is the path's volume name as sent, `rest` what follows it
 * (`call`, `file`, `tar`, `usage`). It checks the volume is this instance's.
 */
export type HomesHandler = (request: Request, volume: string, rest: string) => Promise<Response>

/** The site firewall a node keeps, as the agent's API changes it (cli/node.ts holds it). */
export interface NodeFirewall {
  /** The policy kept now; null when none. */
  policy(): SiteFirewallPolicy | null
  /** Keeps `policy` from now on (written to node.json, the rules replaced); the check from before. */
  set(policy: SiteFirewallPolicy | null): Promise<FirewallCheck | null>
  /** Checks the rules now and puts back what moved (never throws). */
  keep(): Promise<FirewallCheck | null>
}

/** What the agent's API answers from. */
export interface AgentApi {
  info(): Promise<AgentInfo>
  forwards: Forwards
  homes: HomesHandler
  /** Absent: the agent keeps no firewall it can be given (tests), and `PUT /v1/firewall` answers 501. */
  firewall?: NodeFirewall
}

/** A slug as sites are named (domain/sites), so that no path trick names anything else. */
const SLUG = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/
/** A volume name as Docker allows it. */
const VOLUME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/

/** The agent's answer to `fail`: the API's envelope, `{ error: { code, message, param? } }`. */
export function agentError(status: number, code: string, message: string, param?: string): Response {
  return Response.json({ error: { code, message, ...(param ? { param } : {}) } }, { status })
}

/** The default homes handler, until the node's home files are wired in. */
export const NO_HOMES: HomesHandler = async () => agentError(501, 'not_implemented', 'This agent serves no homes.')

/**
 * Routes one request of the agent's API (drivers/cluster/types.ts, AGENT_ROUTES); the caller
 * checked the client certificate and the remote address already.
 */
export async function routeAgentRequest(api: AgentApi, request: Request): Promise<Response> {
  const url = new URL(request.url)
  const path = url.pathname
  if (path === '/v1/info') {
    if (request.method !== 'GET') return agentError(405, 'method_not_allowed', 'GET /v1/info only.')
    return Response.json(await api.info())
  }
  if (path === '/v1/firewall') return routeFirewall(api.firewall, request)
  if (path.startsWith('/v1/forwards/')) {
    const res = await routeForward(api.forwards, request, path.slice('/v1/forwards/'.length))
    // A forward follows a site's new container, whose network the engine may just have made (its
    // rules on top of FORWARD): the firewall's backstop goes back above them.
    if (res.ok && request.method === 'PUT') void api.firewall?.keep()
    return res
  }
  if (path.startsWith('/v1/homes/')) {
    const [volume = '', ...rest] = path.slice('/v1/homes/'.length).split('/')
    if (!VOLUME.test(volume)) return agentError(404, 'not_found', 'No such volume.')
    return api.homes(request, volume, rest.join('/'))
  }
  return agentError(404, 'not_found', `No route ${request.method} ${path} on this agent.`)
}

async function routeFirewall(firewall: NodeFirewall | undefined, request: Request): Promise<Response> {
  if (request.method !== 'PUT') return agentError(405, 'method_not_allowed', 'PUT /v1/firewall only.')
  if (!firewall) return agentError(501, 'not_implemented', 'This agent keeps no site firewall.')
  let body: unknown
  try {
    body = await request.json()
  } catch {
    return agentError(400, 'bad_request', 'The body must be JSON: { "policy": { ... } } or { "policy": null }.')
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('policy' in body) || Object.keys(body).length !== 1) {
    return agentError(422, 'validation_error', 'The body must be { "policy": ... } and nothing else.', 'policy')
  }
  const parsed = parseFirewallPolicy((body as { policy: unknown }).policy)
  if ('error' in parsed) return agentError(422, 'validation_error', `${parsed.param} ${parsed.error}.`, parsed.param)
  const before = await firewall.set(parsed.policy)
  return Response.json({ state: before?.state ?? null })
}

async function routeForward(forwards: Forwards, request: Request, slug: string): Promise<Response> {
  if (!SLUG.test(slug)) return agentError(404, 'not_found', 'No such site.')
  if (request.method === 'DELETE') {
    await forwards.close(slug)
    return new Response(null, { status: 204 })
  }
  if (request.method !== 'PUT') return agentError(405, 'method_not_allowed', 'PUT or DELETE /v1/forwards/{slug}.')
  const body = (await request.json().catch(() => null)) as Partial<ForwardTarget> | null
  if (!body || typeof body.address !== 'string' || !isIpAddress(body.address)) return agentError(422, 'validation_error', 'address must be the container\'s IP address.', 'address')
  if (!Number.isInteger(body.port) || body.port! < 1 || body.port! > 65535) return agentError(422, 'validation_error', 'port must be a TCP port (1-65535).', 'port')
  const port = await forwards.open(slug, { address: body.address, port: body.port! })
  return Response.json({ port })
}
