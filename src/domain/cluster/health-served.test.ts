import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import { lateRecovering } from '../../compose/cluster-ops'
import { NodeUnreachableError, type ClusterNode, type NodeLink } from '../../drivers/cluster/types'
import { acceptsConnection } from '../../drivers/runtime/first-answer'
import type { SiteEndpoint } from '../../drivers/runtime/types'
import { NodesRepository } from './repository'
import { DOWN_AFTER_MS, HEALTH_INTERVAL_MS, NodeHealth } from './health'

/**
 * A node whose agent stopped or crashed while its containers run (issue 36 item 8): its kernel
 * forwards outlive the agent, so each of its sites whose endpoint still takes connections keeps
 * serving, and only the others show recovering. On the real services, store, edge directory and
 * TCP probe against real sockets, over the test double of the cluster runtime and a TEST DOUBLE
 * of the link; the lab kills a real agent (test/cluster-nodes.e2e.test.ts).
 */
let c: ReturnType<typeof clusterInProcess> | null = null
const servers: { stop(close?: boolean): void }[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) s.stop(true)
  await c?.close()
  c = null
})

/** A real TCP listener on loopback standing for a site's forward on the node. */
function listener(): { endpoint: SiteEndpoint; stop(): void } {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  servers.push(server)
  return { endpoint: { containerId: 'c', address: '127.0.0.1', port: server.port }, stop: () => server.stop(true) }
}

function silentLink(up: Set<string>): NodeLink {
  return {
    async fetch(node: ClusterNode) {
      if (!up.has(node.id)) throw new NodeUnreachableError(`${node.address}: connection refused`)
      return Response.json({ nodeId: node.id, swarmNodeId: `swarm-${node.id}`, memoryBytes: 1 << 30, cpus: 2, version: 'test', engineVersion: 'test' })
    },
    engineOptions: () => {
      throw new Error('not in this test')
    },
  }
}

describe('a node whose agent does not answer', () => {
  it('keeps serving each of its sites whose endpoint takes connections, and shows only the others recovering', async () => {
    const late = lateRecovering()
    c = clusterInProcess({ recovering: late.source })
    const served = await c.buy('sv')
    const dead = await c.buy('dd')
    await c.pin(served.slug, 'node_b')
    await c.pin(dead.slug, 'node_b')
    const live = listener()
    const gone = listener()
    gone.stop()
    // The endpoints the edge knows for them: the node's forward ports (here, real sockets on loopback).
    const endpoints = new Map([[served.slug, live.endpoint], [dead.slug, gone.endpoint]])
    const runner = c.h.services.runner
    const up = new Set(['node_a', 'node_b'])
    const health = new NodeHealth({
      nodes: new NodesRepository(c.h.services.store), link: silentLink(up), placement: c.runtime, clock: c.h.clock, log: c.h.log,
      runner: { markDown: (s, id) => runner.markDown(s, id), markStarted: (s) => runner.markStarted(s), isUp: (s) => runner.isUp(s), knownEndpoint: (s) => (runner.knownEndpoint(s) ? endpoints.get(s) : runner.knownEndpoint(s)) },
      accepts: (endpoint) => acceptsConnection(endpoint),
      events: { down: (slug, reason) => told.push(`down ${slug} ${reason}`), up: (slug) => told.push(`up ${slug}`), active: (slug) => !suspended.has(slug) },
    })
    const told: string[] = []
    const suspended = new Set<string>()
    late.set(health)
    const status = async (s: { slug: string; key: string }) => (await c!.h.call('GET', `/api/v1/sites/${s.slug}/`, { key: s.key })).json.data.status
    await health.tick()

    up.delete('node_b')
    for (let t = 0; t <= DOWN_AFTER_MS; t += HEALTH_INTERVAL_MS) {
      c.h.clock.advance(HEALTH_INTERVAL_MS)
      await health.tick()
    }
    expect(c.repo.find('node_b')!.state).toBe('down')
    // The site that still takes connections serves: active in its view, served by the edge.
    expect(await status(served)).toBe('active')
    expect(await c.h.services.directory.resolve(served.slug)).toMatchObject({ state: 'serving' })
    expect([...health.servedWithoutAgent()]).toEqual([served.slug])
    expect(c.h.log.lines.some((l) => String(l.msg).startsWith('a site of a node whose agent does not answer still serves') && l.site === served.slug)).toBe(true)
    // The one that does not is recovering, as before: its owner is told, once.
    expect(await status(dead)).toBe('recovering')
    expect(await c.h.services.directory.resolve(dead.slug)).toMatchObject({ state: 'recovering' })
    expect(told).toEqual([`down ${dead.slug} Its node stopped answering; it comes back when the node does, or elsewhere if the node is evacuated.`])
    told.length = 0

    // Its container stops answering too (the node is lost after all): recovering from the next round.
    live.stop()
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    expect(await status(served)).toBe('recovering')
    expect(health.servedWithoutAgent().size).toBe(0)
    expect(told).toEqual([expect.stringMatching(new RegExp(`^down ${served.slug} `))])
    told.length = 0

    // The agent answers again: both serve again, nothing moved.
    up.add('node_b')
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    expect(c.repo.find('node_b')!.state).toBe('active')
    expect(await status(served)).toBe('active')
    expect(await status(dead)).toBe('active')
    // Back up is told once each answers again (the edge's next look runs them), not before; a
    // site suspended meanwhile is not (its return will be site.resumed).
    expect(told).toEqual([])
    suspended.add(dead.slug)
    for (const s of [served, dead]) expect(await c.h.services.directory.resolve(s.slug)).toMatchObject({ state: 'serving' })
    c.h.clock.advance(HEALTH_INTERVAL_MS)
    await health.tick()
    await health.tick()
    expect(told).toEqual([`up ${served.slug}`])
    suspended.delete(dead.slug)
    await health.tick()
    expect(told).toEqual([`up ${served.slug}`])
  }, 30_000)
})
