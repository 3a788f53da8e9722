import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import { buildNodeHealth, lateRecovering } from '../../compose/cluster-ops'
import { NodeUnreachableError, type AgentInfo, type ClusterNode, type NodeLink } from '../../drivers/cluster/types'
import { DOWN_AFTER_MS, HEALTH_INTERVAL_MS } from './health'

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
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link })
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
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link })
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
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link: linkDouble(new Set(['node_a'])) })
    late.set(health)
    await health.tick()
    expect([...health.recovering()]).toEqual([slug])
    expect(c.repo.find('node_b')!.state).toBe('down')
  }, 30_000)
})
