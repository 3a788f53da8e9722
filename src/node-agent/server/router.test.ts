import { afterAll, describe, expect, it } from 'vitest'
import type { ClusterNode, NodeLink } from '../../drivers/cluster/types'
import type { SiteFirewallPolicy } from '../../drivers/firewall/types'
import { AgentRequestRefusedError, agentClient, callAgent, sendAgent } from '../client/calls'
import { agentHandlers, type NodeFirewall } from './api'
import type { Forwards } from './forwards'
import { routeAgentRequest } from './router'

/**
 * The agent's router and the control plane's client, both made from the contract
 * (contract/routes.ts), over a real listener on loopback (plain HTTP: the mutual TLS is
 * agent.service.test.ts's). What the contract refuses, the agent answers 400 naming the field,
 * and the client does not send.
 */
const NODE_POLICY: SiteFirewallPolicy = { pool: '10.231.0.0/16', publicEdge: null, guardedHost: { address: '10.0.0.1', openPorts: [80, 443] }, closedPorts: { tcp: [2377, 7710, 7711, 7946], udp: [4789, 7946] }, refusedTcpPorts: [25] }
const given: (SiteFirewallPolicy | null)[] = []
const opened: { slug: string; address: string; port: number }[] = []
const firewall: NodeFirewall = {
  policy: () => given.at(-1) ?? null,
  set: async (policy) => {
    given.push(policy)
    return { state: 'drifted', problems: [], tool: 'iptables' }
  },
  keep: async () => null,
}
const forwards = {
  open: async (slug: string, target: { address: string; port: number }) => (opened.push({ slug, ...target }), 40000),
  close: async () => true,
} as unknown as Forwards
const handlers = agentHandlers({
  info: async () => ({ nodeId: 'node_1', swarmNodeId: null, memoryBytes: 1, cpus: 1, version: 'v', engineVersion: 'e', instance: 'i', firewall: NODE_POLICY }),
  forwards,
  firewall,
})
let requests = 0
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => (requests++, routeAgentRequest(handlers, req)) })
afterAll(() => void server.stop(true))
const base = `http://127.0.0.1:${server.port}`
const link: Pick<NodeLink, 'fetch'> = { fetch: (_node, path, init) => fetch(base + path, init) }
const NODE = { id: 'node_1' } as ClusterNode
const put = (path: string, body: string) => fetch(base + path, { method: 'PUT', body, headers: { 'content-type': 'application/json' } })
const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; param?: string; message: string } }).error

describe("the agent's router, from the contract", () => {
  it.each([
    ['a slug of 2 characters', 'ab'],
    ['a slug of 51 characters', 'a'.repeat(51)],
    ['a slug with a capital', 'Shop'],
    ['a slug that is a path trick', 'shop/..'],
  ])('answers 400 for %s, naming slug, and opens nothing', async (_name, slug) => {
    const res = await put(`/v1/forwards/${encodeURIComponent(slug)}`, JSON.stringify({ address: '10.0.0.5', port: 80 }))
    expect(res.status).toBe(400)
    expect(await errorOf(res)).toMatchObject({ code: 'bad_request', param: 'slug' })
    expect(opened).toEqual([])
  })

  it('takes the spec\'s slugs of 3 and 50 characters', async () => {
    for (const slug of ['abc', 'a'.repeat(50)]) {
      const res = await put(`/v1/forwards/${slug}`, JSON.stringify({ address: '10.0.0.5', port: 80 }))
      expect([res.status, await res.json()]).toEqual([200, { port: 40000 }])
    }
    expect(opened.map((o) => o.slug)).toEqual(['abc', 'a'.repeat(50)])
    opened.length = 0
  })

  it('answers 400 for a missing or extra field, or a wrong type, naming it', async () => {
    for (const [body, param] of [
      [{ address: '10.0.0.5' }, 'port'],
      [{ port: 80 }, 'address'],
      [{ address: '10.0.0.5', port: 70000 }, 'port'],
      [{ address: '10.0.0.5', port: '80' }, 'port'],
      [{ address: '10.0.0.5', port: 80, extra: 1 }, 'extra'],
    ] as const) {
      const res = await put('/v1/forwards/shop', JSON.stringify(body))
      expect([res.status, (await errorOf(res)).param], JSON.stringify(body)).toEqual([400, param])
    }
    expect(opened).toEqual([])
  })

  it('keeps the firewall policy sent and answers the state found before', async () => {
    const res = await put('/v1/firewall', JSON.stringify({ policy: NODE_POLICY }))
    expect([res.status, await res.json()]).toEqual([200, { state: 'drifted' }])
    expect(given).toEqual([NODE_POLICY])
    given.length = 0
  })

  it('refuses a bad firewall body with the field, and changes nothing', async () => {
    for (const [body, status, param] of [
      ['{"policy":', 400, 'body'],
      [JSON.stringify(NODE_POLICY), 400, 'policy'],
      [JSON.stringify({ policy: { ...NODE_POLICY, pool: '10.0.0.0/33' } }), 422, 'policy.pool'],
      [JSON.stringify({ policy: NODE_POLICY, also: 1 }), 400, 'also'],
      [JSON.stringify({ policy: { ...NODE_POLICY, closedPorts: { tcp: ['2377'], udp: [] } } }), 400, 'policy'],
    ] as const) {
      const res = await put('/v1/firewall', body)
      expect([res.status, (await errorOf(res)).param], body).toEqual([status, param])
    }
    expect(given).toEqual([])
  })

  it('answers 400 for a volume that is no Docker name, before any folder is looked for', async () => {
    for (const volume of ['-x', 'a%2Fb', '.hidden', 'x'.repeat(256)]) {
      const res = await fetch(`${base}/v1/homes/${volume}/usage`)
      expect([res.status, (await errorOf(res)).param], volume).toEqual([400, 'volume'])
    }
    expect((await fetch(`${base}/v1/homes/berth-x-home/usage`)).status).toBe(501)
  })

  it('answers 404 for a path no route has, 405 with Allow for another method', async () => {
    expect((await fetch(`${base}/v1/nothing`)).status).toBe(404)
    const res = await fetch(`${base}/v1/firewall`)
    expect([res.status, res.headers.get('allow')]).toEqual([405, 'PUT'])
  })
})

describe("the control plane's client, from the same contract", () => {
  it('sends what the contract takes and reads the typed answer', async () => {
    const client = agentClient(link)
    const info = await client.info(NODE, {})
    expect([info.nodeId, info.firewall]).toEqual(['node_1', NODE_POLICY])
    expect(await callAgent(link, NODE, 'openForward', { params: { slug: 'shop' }, body: { address: '10.0.0.5', port: 80 } })).toEqual({ port: 40000 })
    expect(await client.setFirewall(NODE, { body: { policy: null } })).toEqual({ state: 'drifted' })
    expect(await client.closeForward(NODE, { params: { slug: 'shop' } })).toBeUndefined()
    opened.length = 0
    given.length = 0
  })

  it('refuses to send a request the agent would refuse, naming the field', async () => {
    const before = requests
    const refusal = (p: () => Promise<unknown>) => p().then(() => null, (err: unknown) => err)
    for (const [attempt, param] of [
      [() => callAgent(link, NODE, 'openForward', { params: { slug: 'ab' }, body: { address: '10.0.0.5', port: 80 } }), 'slug'],
      [() => callAgent(link, NODE, 'openForward', { params: { slug: 'a'.repeat(51) }, body: { address: '10.0.0.5', port: 80 } }), 'slug'],
      [() => callAgent(link, NODE, 'openForward', { params: { slug: 'shop' }, body: { address: '10.0.0.5' } as never }), 'port'],
      [() => sendAgent(link, NODE, 'homeUsage', { params: { volume: '../etc' } }), 'volume'],
      [() => sendAgent(link, NODE, 'homeFile', { params: { volume: 'v' }, query: { path: 'a' }, headers: { range: 'bytes=5' } }), 'range'],
    ] as const) {
      const err = await refusal(attempt)
      expect(err).toBeInstanceOf(AgentRequestRefusedError)
      expect((err as AgentRequestRefusedError).param).toBe(param)
    }
    expect(requests).toBe(before)
  })
})
