import { describe, expect, it } from 'vitest'
import { domainStore } from '../../../test/helpers/domain-store'
import { ClusterPki, makeNodeKey } from '../../drivers/cluster/pki'
import type { JoinRequest } from '../../drivers/cluster/types'
import { loadConfig } from '../../config/config'
import { nodeFirewallPolicyOf } from '../../drivers/firewall/select'
import { DomainError } from '../errors'
import { hashToken, InvalidJoinTokenError, JoinService, NodeNameTakenError } from './join'
import { NodesRepository } from './repository'

/** A join service on a real store and a real PKI; the Swarm manager answers a fixed worker token. */
async function setup() {
  const t = domainStore()
  const repo = new NodesRepository(t.store)
  const pki = await ClusterPki.open(t.dir)
  const joins = new JoinService(repo, pki, { workerJoinToken: async () => 'SWMTKN-1-test' }, t.clock, { controlAddress: '10.0.0.1', tokenMinutes: 60, firewall: { pool: '10.231.0.0/16', publicEdge: null } })
  const { csrPem } = await makeNodeKey('worker-1')
  const request = (token: string, over: Partial<JoinRequest> = {}): JoinRequest => ({
    token, csr: csrPem, name: 'worker-1', address: '10.0.0.2', agentPort: 7710, memoryBytes: 8 << 30, cpus: 4, ...over,
  })
  return { t, repo, pki, joins, request }
}

describe('joining a node', () => {
  it('issues bnj_ tokens of 256 bits, keeping only their hash, and joins once with one', async () => {
    const { t, repo, pki, joins, request } = await setup()
    const { token, expiresAt } = joins.issueToken()
    expect(token).toMatch(/^bnj_[A-Za-z0-9_-]{43}$/)
    expect(expiresAt).toBe(t.clock.now() + 60 * 60_000)
    const stored = t.store.sqlite.query('SELECT token_hash FROM node_join_tokens').all() as { token_hash: string }[]
    expect(stored.map((r) => r.token_hash)).not.toContain(token)
    const answer = await joins.join(request(token))
    expect(answer).toMatchObject({ clientCa: pki.clientCaPem, swarmToken: 'SWMTKN-1-test', managerAddress: '10.0.0.1', controlAddress: '10.0.0.1', firewall: { pool: '10.231.0.0/16', publicEdge: null } })
    expect(answer.nodeId).toMatch(/^node_[0-9a-f]{12}$/)
    expect(answer.certificate).toContain('BEGIN CERTIFICATE')
    const node = repo.find(answer.nodeId)!
    expect(node).toMatchObject({ name: 'worker-1', address: '10.0.0.2', agentPort: 7710, state: 'joining', memoryBytes: 8 << 30, cpus: 4, swarmNodeId: null })
    expect(node.certFingerprint).toMatch(/^[0-9a-f]{64}$/)
  })

  it('refuses a replayed token, an expired one and an unknown one alike, recording no node', async () => {
    const { t, repo, joins, request } = await setup()
    const { token } = joins.issueToken()
    await joins.join(request(token))
    await expect(joins.join(request(token, { name: 'worker-2', address: '10.0.0.3' }))).rejects.toBeInstanceOf(InvalidJoinTokenError)
    const late = joins.issueToken().token
    t.clock.advance(60 * 60_000)
    await expect(joins.join(request(late, { name: 'worker-3', address: '10.0.0.4' }))).rejects.toBeInstanceOf(InvalidJoinTokenError)
    await expect(joins.join(request(`bnj_${'A'.repeat(43)}`, { name: 'worker-4', address: '10.0.0.5' }))).rejects.toBeInstanceOf(InvalidJoinTokenError)
    await expect(joins.join(request('not-a-token', { name: 'worker-4', address: '10.0.0.5' }))).rejects.toBeInstanceOf(InvalidJoinTokenError)
    expect(repo.list().map((n) => n.name)).toEqual(['worker-1'])
  })

  it('lets one of two joins racing with the same token through', async () => {
    const { repo, joins, request } = await setup()
    const { token } = joins.issueToken()
    const results = await Promise.allSettled([joins.join(request(token)), joins.join(request(token, { name: 'worker-2', address: '10.0.0.3' }))])
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    expect((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(InvalidJoinTokenError)
    expect(repo.list()).toHaveLength(1)
  })

  it('answers bad input with the field at fault and keeps the token for a corrected join', async () => {
    const { joins, request } = await setup()
    const { token } = joins.issueToken()
    const cases: [Partial<JoinRequest>, string, RegExp][] = [
      [{ csr: 'not a csr' }, 'csr', /PEM certificate request/],
      [{ csr: '' }, 'csr', /PEM certificate request/],
      [{ name: 'bad name!' }, 'name', /host name/],
      [{ address: 'node-b.example' }, 'address', /IP address/],
      [{ address: '10.0.0.1' }, 'address', /control plane's own/],
      [{ agentPort: 65535 }, 'agentPort', /65534/],
      [{ agentPort: 'x' as never }, 'agentPort', /TCP port/],
      [{ memoryBytes: -1 }, 'memoryBytes', /whole number/],
      [{ cpus: 1.5 }, 'cpus', /whole number/],
    ]
    for (const [over, field, message] of cases) {
      const err = await joins.join(request(token, over)).catch((e: unknown) => e)
      expect(err, field).toBeInstanceOf(DomainError)
      expect((err as DomainError).kind).toBe('invalid')
      expect((err as DomainError).field).toBe(field)
      expect((err as DomainError).message).toMatch(message)
    }
    await expect(joins.join(request(token))).resolves.toMatchObject({ controlAddress: '10.0.0.1' })
  })

  it('refuses a second node with a name or address in use, until the first is removed', async () => {
    const { t, repo, joins, request } = await setup()
    const first = await joins.join(request(joins.issueToken().token))
    const token = joins.issueToken().token
    const taken = joins.join(request(token, { address: '10.0.0.9' }))
    await expect(taken).rejects.toBeInstanceOf(NodeNameTakenError)
    await expect(taken).rejects.toMatchObject({ kind: 'conflict', field: 'name', message: expect.stringContaining('--name') })
    await expect(joins.join(request(token, { name: 'worker-9' }))).rejects.toMatchObject({ kind: 'conflict', field: 'address' })
    repo.setState(first.nodeId, ['joining', 'active'], 'removed', t.clock.now())
    await expect(joins.join(request(token))).resolves.toMatchObject({ controlAddress: '10.0.0.1' })
  })

  it('refuses a name a draining or down node has, keeping the token for a join under another name', async () => {
    const { t, repo, joins, request } = await setup()
    const first = await joins.join(request(joins.issueToken().token))
    const token = joins.issueToken().token
    for (const state of ['draining', 'down'] as const) {
      repo.setState(first.nodeId, ['joining', 'active', 'draining'], state)
      await expect(joins.join(request(token, { address: '10.0.0.9' }))).rejects.toMatchObject({ kind: 'conflict', field: 'name', message: expect.stringContaining(state) })
      expect(repo.tokenUsable(hashToken(token), t.clock.now())).toBe(true)
    }
    await expect(joins.join(request(token, { name: 'worker-9', address: '10.0.0.9' }))).resolves.toMatchObject({ controlAddress: '10.0.0.1' })
    expect(repo.list().map((n) => n.name).sort()).toEqual(['worker-1', 'worker-9'])
  })

  it('refuses the second of two joins under one name that ran at the same time', async () => {
    const { repo, joins, request } = await setup()
    const results = await Promise.allSettled([
      joins.join(request(joins.issueToken().token)),
      joins.join(request(joins.issueToken().token, { address: '10.0.0.9' })),
    ])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({ reason: expect.any(NodeNameTakenError) })
    expect(repo.list().map((n) => n.name)).toEqual(['worker-1'])
  })
  it('answers with the site firewall of the cluster the node is now in: its own address blocked, its own agent ports closed', async () => {
    const { t, repo, pki, request } = await setup()
    const config = loadConfig({ file: null, env: { BERTH_CLUSTER_ENABLED: 'true', BERTH_CLUSTER_ADDRESS: '10.0.0.1', BERTH_CONTAINERS_FIREWALL: 'true' } })
    // As berth serve wires it (compose/cluster.ts): the policy follows the nodes in the store.
    const joins = new JoinService(repo, pki, { workerJoinToken: async () => 'SWMTKN-1-test' }, t.clock, {
      controlAddress: '10.0.0.1', tokenMinutes: 60, firewall: () => nodeFirewallPolicyOf(config, repo.list({ live: true })),
    })
    const answer = await joins.join(request(joins.issueToken().token, { agentPort: 7810 }))
    expect(answer.firewall).toMatchObject({ blockedHosts: ['10.0.0.2'], closedPorts: { tcp: [2377, 7710, 7711, 7810, 7811, 7946] } })
    // What the health rounds then compare the node's policy with: the same, so nothing more is sent.
    expect(answer.firewall).toEqual(nodeFirewallPolicyOf(config, repo.list({ live: true })))
  })
})
