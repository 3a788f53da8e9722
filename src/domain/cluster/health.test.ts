import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import { buildNodeHealth, lateRecovering } from '../../compose/cluster-ops'
import { NodeUnreachableError, type AgentInfo, type ClusterNode, type NodeLink } from '../../drivers/cluster/types'
import type { SiteFirewallPolicy } from '../../drivers/firewall/types'
import { DOWN_AFTER_MS, HEALTH_INTERVAL_MS, samePolicy } from './health'

/**
 * The node health monitor on the real services and store, with the sites' API views and the
 * edge's directory, over the test double of the cluster runtime and a TEST DOUBLE of the link
 * (the agents answer `/v1/info` or do not, on cue); the lab stops a real node's engine.
 */
const GIB = 1024 ** 3
let c: ReturnType<typeof clusterInProcess>
afterEach(async () => c && (await c.close()))

/** A link whose agents answer while `up` holds their id; each call is counted. */
function linkDouble(up: Set<string>, info: Partial<AgentInfo> = {}): NodeLink & { asked: string[] } {
  const asked: string[] = []
  return {
    asked,
    async fetch(node: ClusterNode, path: string) {
      asked.push(`${node.id} ${path}`)
      if (!up.has(node.id)) throw new NodeUnreachableError(`${node.address}: connection refused`)
      return Response.json({ nodeId: node.id, swarmNodeId: `swarm-${node.id}`, memoryBytes: 16 * GIB, cpus: 8, version: 'test', engineVersion: 'test', ...info })
    },
    engineOptions: () => {
      throw new Error('not in this test')
    },
  }
}

describe('node health', () => {
  it('marks a silent node down after 6 s, shows its sites recovering, and active again when it answers', async () => {
    const late = lateRecovering()
    c = clusterInProcess({ recovering: late.source })
    const { slug, key } = await c.buy('hl')
    const other = await c.buy('hk')
    await c.pin(slug, 'node_b')
    const up = new Set(['node_a', 'node_b'])
    const link = linkDouble(up)
    // A lost node: its sites' forwards take no connection either (health-served.test.ts has the other case).
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link, accepts: async () => false })
    late.set(health)
    const status = async (s: string, k: string) => (await c.h.call('GET', `/api/v1/sites/${s}/`, { key: k })).json.data.status

    await health.tick()
    expect(link.asked).toEqual(['node_a /v1/info', 'node_b /v1/info'])
    expect(c.repo.find('node_b')).toMatchObject({ state: 'active', lastSeenAt: c.h.clock.now(), memoryBytes: 16 * GIB, cpus: 8 })
    expect(await status(slug, key)).toBe('active')

    up.delete('node_b')
    for (let t = 0; t < DOWN_AFTER_MS; t += HEALTH_INTERVAL_MS) {
      c.h.clock.advance(HEALTH_INTERVAL_MS)
      await health.tick()
      expect(c.repo.find('node_b')!.state).toBe('active')
    }
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    expect(c.repo.find('node_b')!.state).toBe('down')
    expect(c.h.log.lines.some((l) => l.level === 'error' && String(l.msg).startsWith('a node stopped answering') && l.node === 'node_b')).toBe(true)
    expect([...health.recovering()]).toEqual([slug])
    // The owner's view says so (the list's cache too), the edge answers its page without trying,
    // and a site on another node is untouched.
    expect(await status(slug, key)).toBe('recovering')
    const listed = await c.h.call('GET', '/api/v1/sites/', { key })
    expect(listed.json.data.find((s: { slug: string }) => s.slug === slug).status).toBe('recovering')
    expect(await c.h.services.directory.resolve(slug)).toMatchObject({ state: 'recovering' })
    expect(await status(other.slug, other.key)).toBe('active')

    up.add('node_b')
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    expect(c.repo.find('node_b')).toMatchObject({ state: 'active', lastSeenAt: c.h.clock.now() })
    expect(health.recovering().size).toBe(0)
    expect(await status(slug, key)).toBe('active')
    expect((await c.h.call('GET', '/api/v1/sites/', { key })).json.data.find((s: { slug: string }) => s.slug === slug).status).toBe('active')
  }, 30_000)

  it('keeps a draining node draining while it is silent, its sites still recovering, and never asks a removed one', async () => {
    const late = lateRecovering()
    c = clusterInProcess({ recovering: late.source })
    const { slug } = await c.buy('hd')
    await c.pin(slug, 'node_a')
    c.repo.setState('node_a', ['active'], 'draining')
    c.repo.setState('node_b', ['active'], 'removed', c.h.clock.now())
    const link = linkDouble(new Set())
    // A lost node: its sites' forwards take no connection either (health-served.test.ts has the other case).
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link, accepts: async () => false })
    late.set(health)
    for (let t = 0; t <= DOWN_AFTER_MS; t += HEALTH_INTERVAL_MS) {
      await health.tick()
      c.h.clock.advance(HEALTH_INTERVAL_MS)
    }
    expect(c.repo.find('node_a')!.state).toBe('draining')
    expect([...health.recovering()]).toEqual([slug])
    expect(link.asked.every((a) => a.startsWith('node_a '))).toBe(true)
  }, 30_000)

  it('shows the sites of a node the store has down at once after a restart, while it stays silent', async () => {
    const late = lateRecovering()
    c = clusterInProcess({ recovering: late.source })
    const { slug } = await c.buy('hr')
    await c.pin(slug, 'node_b')
    c.repo.setState('node_b', ['active'], 'down')
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link: linkDouble(new Set(['node_a'])), accepts: async () => false })
    late.set(health)
    await health.tick()
    expect([...health.recovering()]).toEqual([slug])
    expect(c.repo.find('node_b')!.state).toBe('down')
  }, 30_000)
})

describe('an agent that restarted', () => {
  it('has its forwards asked for again: the runtime forgets them and the edge looks its sites up again; a first answer is no restart', async () => {
    c = clusterInProcess()
    const onB = await c.buy('hf')
    const onA = await c.buy('hg')
    await c.pin(onB.slug, 'node_b')
    await c.pin(onA.slug, 'node_a')
    const instance = { id: 'first' }
    const lost: string[] = []
    const link = linkDouble(new Set(['node_a', 'node_b']))
    const fetch = link.fetch.bind(link)
    link.fetch = async (node, path) => {
      const res = await fetch(node, path)
      return Response.json({ ...await res.json() as AgentInfo, instance: node.id === 'node_b' ? instance.id : 'a' })
    }
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link, forwardsLost: (id) => void lost.push(id) })
    const started: string[] = []
    const markStarted = c.h.services.runner.markStarted.bind(c.h.services.runner)
    c.h.services.runner.markStarted = (slug: string) => (started.push(slug), markStarted(slug))
    await health.tick()
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    expect([lost, started]).toEqual([[], []])
    instance.id = 'second'
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    await until(() => started.length > 0)
    expect([lost, started]).toEqual([['node_b'], [onB.slug]])
    expect(c.h.log.lines.some((l) => String(l.msg).startsWith('the agent of a node restarted') && l.node === 'node_b')).toBe(true)
  }, 30_000)
})

describe('the nodes\' site firewall', () => {
  const POLICY: SiteFirewallPolicy = { pool: '10.231.0.0/16', publicEdge: null, guardedHost: { address: '10.0.0.1', openPorts: [8080] }, closedPorts: { tcp: [2377, 7710, 7711, 7946], udp: [4789, 7946] } }
  const OLDER: SiteFirewallPolicy = { pool: '10.231.0.0/16', publicEdge: null, guardedHost: { address: '10.0.0.1', openPorts: [8080] } }

  /** Agents that keep a policy each (absent: an agent that cannot be given one) and take a PUT, or refuse it while `refusing`. */
  function agents(kept: Record<string, SiteFirewallPolicy | null | undefined>) {
    const sent: { node: string; policy: unknown }[] = []
    const state = { refusing: false }
    const link = {
      async fetch(node: ClusterNode, path: string, init?: RequestInit) {
        if (path === '/v1/firewall' && init?.method === 'PUT') {
          const { policy } = JSON.parse(String(init.body)) as { policy: SiteFirewallPolicy | null }
          sent.push({ node: node.id, policy })
          if (state.refusing) return Response.json({ error: { code: 'internal_error', message: 'iptables failed' } }, { status: 500 })
          kept[node.id] = policy
          return Response.json({ state: 'drifted' })
        }
        const firewall = kept[node.id]
        return Response.json({ nodeId: node.id, swarmNodeId: `swarm-${node.id}`, memoryBytes: 16 * GIB, cpus: 8, version: 'test', engineVersion: 'test', ...(firewall === undefined ? {} : { firewall }) })
      },
      engineOptions: () => {
        throw new Error('not in this test')
      },
    } as NodeLink
    return { link, sent, kept, state }
  }

  it('sends the control plane\'s policy to a node that keeps another (one joined before a change), once, and leaves the others', async () => {
    c = clusterInProcess()
    const a = agents({ node_a: OLDER, node_b: { ...POLICY, closedPorts: { ...POLICY.closedPorts! } } })
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link: a.link, firewall: POLICY })
    await health.tick()
    await until(() => a.sent.length === 1)
    expect(a.sent).toEqual([{ node: 'node_a', policy: POLICY }])
    expect(c.h.log.lines.some((l) => String(l.msg).startsWith('gave a node the control plane') && l.node === 'node_a')).toBe(true)
    // The node now shows the policy: the next rounds send nothing.
    for (let i = 0; i < 3; i++) {
      c.h.clock.advance(HEALTH_INTERVAL_MS)
      await health.tick()
    }
    expect(a.sent).toHaveLength(1)
  }, 30_000)

  it('compares whole policies, an absent field as null', () => {
    const { closedPorts: _, ...older } = POLICY
    expect(samePolicy(POLICY, JSON.parse(JSON.stringify(POLICY)))).toBe(true)
    expect(samePolicy(older, { ...older, closedPorts: null })).toBe(true)
    expect(samePolicy(POLICY, older)).toBe(false)
    expect(samePolicy(null, undefined)).toBe(true)
    expect(samePolicy(POLICY, null)).toBe(false)
  })

  it('sends null when the control plane keeps no firewall, and nothing to an agent that cannot be given one', async () => {
    c = clusterInProcess()
    const a = agents({ node_a: OLDER, node_b: undefined })
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link: a.link, firewall: null })
    await health.tick()
    await until(() => a.sent.length === 1)
    expect(a.sent).toEqual([{ node: 'node_a', policy: null }])
  }, 30_000)

  it('tries a node that failed the change again after 30 s, not at every round', async () => {
    c = clusterInProcess()
    const a = agents({ node_a: OLDER, node_b: POLICY })
    a.state.refusing = true
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link: a.link, firewall: POLICY })
    await health.tick()
    await until(() => c.h.log.lines.some((l) => String(l.msg).startsWith('could not give a node')))
    for (let t = HEALTH_INTERVAL_MS; t < 30_000; t += HEALTH_INTERVAL_MS) {
      c.h.clock.advance(HEALTH_INTERVAL_MS)
      await health.tick()
    }
    expect(a.sent).toHaveLength(1)
    a.state.refusing = false
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    await until(() => a.sent.length === 2)
    expect(a.kept.node_a).toEqual(POLICY)
  }, 30_000)
})

async function until(ok: () => boolean, withinMs = 2000): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`)
    await Bun.sleep(5)
  }
}
