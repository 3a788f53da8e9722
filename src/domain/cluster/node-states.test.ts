import { afterEach, describe, expect, it } from 'vitest'
import { clusterInProcess } from '../../../test/helpers/cluster-double'
import { domainStore } from '../../../test/helpers/domain-store'
import { buildNodeHealth } from '../../compose/cluster-ops'
import { ClusterPki, makeNodeKey } from '../../drivers/cluster/pki'
import { NodeUnreachableError, type ClusterNode, type JoinRequest, type NodeLink } from '../../drivers/cluster/types'
import { chooseNode } from '../../drivers/runtime/swarm/placement'
import { DomainError } from '../errors'
import { DOWN_AFTER_MS, HEALTH_INTERVAL_MS } from './health'
import { JoinService } from './join'
import { NodesRepository } from './repository'

/**
 * A node's first steps (issue 36 item 8): `joining` from its join until its agent first answers,
 * placement skipping it meanwhile; and its public address, given at the join or later, which the
 * SSH view of its sites gives. On the real store, services and PKI, over the test double of the
 * cluster runtime and a TEST DOUBLE of the link (the lab runs the same on real engines:
 * test/cluster-nodes.e2e.test.ts).
 */
const GIB = 1024 ** 3
let c: ReturnType<typeof clusterInProcess> | null = null
afterEach(async () => {
  await c?.close()
  c = null
})

async function joinService() {
  const t = domainStore()
  const repo = new NodesRepository(t.store)
  const joins = new JoinService(repo, await ClusterPki.open(t.dir), { workerJoinToken: async () => 'SWMTKN-1-test' }, t.clock, { controlAddress: '10.0.0.1', tokenMinutes: 60, firewall: null })
  const { csrPem } = await makeNodeKey('worker-1')
  const request = (over: Partial<JoinRequest> = {}): JoinRequest => ({
    token: joins.issueToken().token, csr: csrPem, name: 'worker-1', address: '10.0.0.2', agentPort: 7710, memoryBytes: 8 * GIB, cpus: 4, ...over,
  })
  return { repo, joins, request }
}

/** A link whose agents answer `/v1/info` while `up` holds their id. */
function linkDouble(up: Set<string>): NodeLink {
  return {
    async fetch(node: ClusterNode) {
      if (!up.has(node.id)) throw new NodeUnreachableError(`${node.address}: connection refused`)
      return Response.json({ nodeId: node.id, swarmNodeId: `swarm-${node.id}`, memoryBytes: 16 * GIB, cpus: 8, version: 'test', engineVersion: 'test' })
    },
    engineOptions: () => {
      throw new Error('not in this test')
    },
  }
}

describe('a joined node', () => {
  it('is joining until its agent first answers, never down before, and active from then on', async () => {
    const { repo, joins, request } = await joinService()
    const answer = await joins.join(request())
    expect(repo.find(answer.nodeId)).toMatchObject({ state: 'joining', lastSeenAt: null })

    c = clusterInProcess()
    c.repo.setState('node_a', ['active'], 'joining')
    const up = new Set(['node_b'])
    const health = buildNodeHealth(c.h.services, { placement: c.runtime, link: linkDouble(up) })
    // Silent for longer than a down node's 6 s: still joining (it never was up), nothing logged as down.
    for (let t = 0; t <= DOWN_AFTER_MS + HEALTH_INTERVAL_MS; t += HEALTH_INTERVAL_MS) {
      await health.tick()
      c.h.clock.advance(HEALTH_INTERVAL_MS)
    }
    expect(c.repo.find('node_a')!.state).toBe('joining')
    expect(c.h.log.lines.some((l) => String(l.msg).startsWith('a node stopped answering') && l.node === 'node_a' && l.level === 'error')).toBe(false)

    up.add('node_a')
    await health.tick()
    expect(c.repo.find('node_a')).toMatchObject({ state: 'active', lastSeenAt: c.h.clock.now(), memoryBytes: 16 * GIB })
    expect(c.h.log.lines.some((l) => String(l.msg).startsWith('a joined node answered for the first time') && l.node === 'node_a')).toBe(true)
  }, 30_000)

  it('takes no site while joining: placement skips it and a move there is refused with its state', async () => {
    c = clusterInProcess()
    const { slug } = await c.buy('nj')
    c.repo.setState('node_a', ['active'], 'joining')
    // node_a (8 GiB) is the freest; joining, it is passed over.
    expect(await c.runtime.choose(1024)).toBe('control')
    await expect(c.runtime.choose(3500)).rejects.toThrow('no active node')
    expect(chooseNode([{ id: 'control', state: 'active', memoryBytes: GIB, usedBytes: GIB }, { id: 'n', state: 'joining', memoryBytes: 64 * GIB, usedBytes: 0 }], 512)).toBeNull()
    const refused = await c.ops.mover.move(slug, 'node_a').then(() => null, (e: unknown) => e)
    expect(refused).toBeInstanceOf(DomainError)
    expect(refused).toMatchObject({ kind: 'invalid', field: 'to', message: expect.stringContaining('node_a is joining') })
    // Draining or removing a joining node works as for any other.
    expect((await c.ops.nodes.drain('node_a')).state).toBe('draining')
  })
})

describe("a node's public address", () => {
  it('is kept from the join, refused when it is no host, and changed or forgotten by berth nodes set', async () => {
    const { repo, joins, request } = await joinService()
    const joined = await joins.join(request({ publicAddress: '203.0.113.7' }))
    expect(repo.find(joined.nodeId)!.publicAddress).toBe('203.0.113.7')
    const bad = await joins.join(request({ name: 'worker-2', address: '10.0.0.3', publicAddress: 'http://box/' })).then(() => null, (e: unknown) => e)
    expect(bad).toMatchObject({ kind: 'invalid', field: 'publicAddress', message: expect.stringContaining('IP address or a host name') })
    expect(repo.list().map((n) => n.name)).toEqual(['worker-1'])

    c = clusterInProcess()
    expect((await c.ops.nodes.list()).find((n) => n.id === 'node_a')!.public_address).toBeNull()
    expect(await c.ops.nodes.setPublicAddress('node_a', 'box-a.example.net')).toMatchObject({ id: 'node_a', public_address: 'box-a.example.net' })
    expect(c.repo.find('node_a')!.publicAddress).toBe('box-a.example.net')
    for (const wrong of ['box a', '10.0.0.2:22', 'ssh://box', '-box', '']) {
      const err = await c.ops.nodes.setPublicAddress('node_a', wrong).then(() => null, (e: unknown) => e)
      expect(err, wrong).toMatchObject({ kind: 'invalid', field: 'public_address' })
    }
    expect(await c.ops.nodes.setPublicAddress('node_a', null)).toMatchObject({ public_address: null })
    expect(await c.ops.nodes.setPublicAddress('node_x', '203.0.113.7').then(() => null, (e: unknown) => e)).toMatchObject({ kind: 'not_found', field: 'node' })
    expect(await c.ops.nodes.setPublicAddress('control', '203.0.113.7').then(() => null, (e: unknown) => e)).toMatchObject({ kind: 'invalid', field: 'node', message: expect.stringContaining('ssh.host') })
  })
})
