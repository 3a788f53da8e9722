import type Docker from 'dockerode'
import { describe, expect, it } from 'vitest'
import { memoryLogger } from '../../../lib/logger'
import type { ClusterNode, NodeLink } from '../../cluster/types'
import { Forwards } from './forwards'
import type { Engine } from './node-engines'

const B = { id: 'node_b', address: '10.0.0.2' } as ClusterNode

/** The agent of node B, as the forwards see it: each PUT opens a forward on a new port. */
function agentOfB() {
  const asked: { method: string; slug: string; address?: string }[] = []
  const link = {
    fetch: async (_node: ClusterNode, path: string, init?: RequestInit) => {
      const slug = decodeURIComponent(path.split('/').at(-1)!)
      const body = init?.body ? JSON.parse(String(init.body)) as { address: string } : undefined
      asked.push({ method: init?.method ?? 'GET', slug, address: body?.address })
      return Response.json({ port: 41000 + asked.length })
    },
  } as unknown as NodeLink
  return { asked, forwards: new Forwards(link, () => [B], memoryLogger()) }
}

const onB = { nodeId: B.id, node: B } as Engine
const container = (id: string, address: string) => ({ Id: id, NetworkSettings: { Networks: { net: { IPAddress: address } } } }) as unknown as Docker.ContainerInspectInfo

describe('the forwards to sites on other nodes', () => {
  it('asks the agent once per container, and again for a new container at the same address (the old forward may have been closed meanwhile)', async () => {
    const { asked, forwards } = agentOfB()
    const first = await forwards.endpointOf(onB, 'net', 'shop', container('c1', '10.231.0.2'))
    expect(first).toEqual({ containerId: 'c1', address: '10.0.0.2', port: 41001 })
    // The same container again (the edge's every lookup): no request.
    expect(await forwards.endpointOf(onB, 'net', 'shop', container('c1', '10.231.0.2'))).toEqual(first)
    expect(asked).toHaveLength(1)
    // The site moved away and back by `berth sites move` (which closed the forward): its new
    // container has the same address; the forward is asked for again.
    const again = await forwards.endpointOf(onB, 'net', 'shop', container('c2', '10.231.0.2'))
    expect(again).toEqual({ containerId: 'c2', address: '10.0.0.2', port: 41002 })
    expect(asked.map((a) => `${a.method} ${a.slug} ${a.address}`)).toEqual(['PUT shop 10.231.0.2', 'PUT shop 10.231.0.2'])
  })

  it('asks again at once for every forward of a node whose agent restarted, not one per request: the first asked would replace the former rules alone', async () => {
    const { asked, forwards } = agentOfB()
    await forwards.endpointOf(onB, 'net', 'shop', container('c1', '10.231.0.2'))
    await forwards.endpointOf(onB, 'net', 'blog', container('c2', '10.231.0.18'))
    await forwards.forgetNode(B.id)
    expect(asked.slice(2).map((a) => `${a.method} ${a.slug} ${a.address}`).sort()).toEqual(['PUT blog 10.231.0.18', 'PUT shop 10.231.0.2'])
    // Known again with the ports the restarted agent gave (41003, 41004): the next lookups ask nothing.
    expect([41003, 41004]).toContain((await forwards.endpointOf(onB, 'net', 'shop', container('c1', '10.231.0.2'))).port)
    expect(asked).toHaveLength(4)
  })
})
