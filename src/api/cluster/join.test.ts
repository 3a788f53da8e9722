import { describe, expect, it } from 'vitest'
import { domainStore } from '../../../test/helpers/domain-store'
import { JoinService } from '../../domain/cluster/join'
import { NodesRepository } from '../../domain/cluster/repository'
import { ClusterPki, makeNodeKey } from '../../drivers/cluster/pki'
import { dispatcher, type ListenerServer, type ListenerTargets } from '../../dispatch'
import { CLUSTER_JOIN_PATH, clusterJoinHandler } from './join'

/** The listeners' table with the join wired (or not), every other target answering its name. */
async function listeners(clusterOn: boolean) {
  const t = domainStore()
  const joins = new JoinService(new NodesRepository(t.store), await ClusterPki.open(t.dir), { workerJoinToken: async () => 'SWMTKN-1-test' }, t.clock, { controlAddress: '10.0.0.1', tokenMinutes: 60, firewall: null })
  const other = () => new Response('other')
  const targets: ListenerTargets = {
    acmeAnswer: () => undefined, httpsOrigin: () => null, isSiteHost: () => false, edge: other, plansList: other, webhook: other, mcp: other, console: other,
    metrics: null, clusterJoin: clusterOn ? clusterJoinHandler(joins, t.log) : null,
    api: () => Response.json({ ok: false, error: { code: 'NOT_FOUND', message: 'No such route.' } }, { status: 404 }),
  }
  const dispatch = dispatcher(targets)
  const post = async (body: unknown, method = 'POST') => {
    const res = (await dispatch(new Request(`http://10.0.0.1:8080${CLUSTER_JOIN_PATH}`, { method, body: method === 'GET' ? undefined : typeof body === 'string' ? body : JSON.stringify(body), headers: { host: '10.0.0.1:8080', 'content-type': 'application/json' } }), {} as ListenerServer))!
    return { status: res.status, body: (await res.json()) as { error?: { code: string; message: string; param?: string }; nodeId?: string } }
  }
  const { csrPem } = await makeNodeKey('worker-1')
  const request = (token: string) => ({ token, csr: csrPem, name: 'worker-1', address: '10.0.0.2', agentPort: 7710, memoryBytes: 1 << 30, cpus: 2 })
  return { joins, post, request }
}

describe('POST /cluster/v1/join', () => {
  it('joins with a fresh token, then answers the same token 401 invalid_join_token', async () => {
    const { joins, post, request } = await listeners(true)
    const { token } = joins.issueToken()
    const first = await post(request(token))
    expect(first.status).toBe(200)
    expect(first.body.nodeId).toMatch(/^node_/)
    const replay = await post(request(token))
    expect(replay.status).toBe(401)
    expect(replay.body.error).toMatchObject({ code: 'invalid_join_token' })
    expect(replay.body.error!.message).toMatch(/berth nodes token/)
  })

  it('answers bad input in the envelope with the field, and what is not a join with 400 or 405', async () => {
    const { joins, post, request } = await listeners(true)
    const { token } = joins.issueToken()
    const bad = await post({ ...request(token), csr: '-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n' })
    expect(bad.status).toBe(422)
    expect(bad.body.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'csr' })
    const port = await post({ ...request(token), agentPort: 0 })
    expect(port.body.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'agentPort' })
    expect((await post('{not json')).status).toBe(400)
    expect((await post([1, 2])).status).toBe(422)
    expect((await post(null, 'GET')).status).toBe(405)
    // The token was spent by none of these.
    expect((await post(request(token))).status).toBe(200)
  })

  it('answers a name another node has 409 node_name_taken with param name, and an address taken 409 CONFLICT', async () => {
    const { joins, post, request } = await listeners(true)
    expect((await post(request(joins.issueToken().token))).status).toBe(200)
    const { token } = joins.issueToken()
    const taken = await post({ ...request(token), address: '10.0.0.3' })
    expect(taken.status).toBe(409)
    expect(taken.body.error).toMatchObject({ code: 'node_name_taken', param: 'name' })
    expect(taken.body.error!.message).toContain('--name')
    const address = await post({ ...request(token), name: 'worker-2' })
    expect(address.status).toBe(409)
    expect(address.body.error).toMatchObject({ code: 'CONFLICT', param: 'address' })
    expect((await post({ ...request(token), name: 'worker-2', address: '10.0.0.3' })).status).toBe(200)
  })

  it('is not there when the cluster is off: the API app answers 404', async () => {
    const { joins, post, request } = await listeners(false)
    const res = await post(request(joins.issueToken().token))
    expect(res.status).toBe(404)
    expect(res.body.error!.code).toBe('NOT_FOUND')
  })
})
