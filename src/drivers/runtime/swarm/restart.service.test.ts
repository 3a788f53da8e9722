import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../../lib/logger'
import { startLab, type Lab } from '../../../../test/lab-swarm/lab'
import { CONTROL_NODE, type ClusterNode, type NodeLink } from '../../cluster/types'
import { IMAGES } from '../images'
import { LABEL } from '../site-container'
import type { SiteSpec } from '../types'
import { ClusterRuntime } from './cluster-runtime'

// How long a site on a node is down when Berth restarts it (a restore) or moves it off the node,
// on a real two-node Swarm (test/lab-swarm; B a worker known as node 'nb', its agent stood in for
// by its engine's socket and recorded forwards). Through the service, Swarm reached the container
// about 3 s after the update (the manager's dispatch, then moby's 2 s gossip delay for a task on a
// network); stopped on its node it is gone in well under a second.
const GiB = 1024 ** 3
const instanceId = `t${Math.random().toString(36).slice(2, 8)}`
const log = memoryLogger()
let lab: Lab
let a: Docker
let b: Docker
let runtime: ClusterRuntime
let node: ClusterNode

const spec = (slug: string): SiteSpec => ({ siteId: `id-${slug}`, slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null })

const link: NodeLink = {
  engineOptions: () => ({ socketPath: lab.b.socket }),
  async fetch(_node, _path, init) {
    return (init?.method ?? 'GET') === 'PUT' ? Response.json({ port: 41001 }) : new Response(null, { status: 204 })
  },
}

/** The site's service as the manager has it: its version and replicas. */
async function service(slug: string): Promise<string> {
  const s = await a.getService(`berth-${instanceId}-${slug}`).inspect()
  return `version ${s.Version.Index}, ${s.Spec.Mode.Replicated.Replicas} replica(s)`
}

const running = async (slug: string) => (await b.listContainers({ filters: { label: [`${LABEL.instance}=${instanceId}`, `${LABEL.slug}=${slug}`] } })).map((c) => c.Id)

beforeAll(async () => {
  lab = await startLab([IMAGES.static])
  a = new Docker({ socketPath: lab.a.socket })
  b = new Docker({ socketPath: lab.b.socket })
  node = { id: 'nb', name: 'b', address: lab.b.address, agentPort: 7710, swarmNodeId: lab.b.swarmNodeId, certFingerprint: 'x', certSerial: '1', state: 'active', memoryBytes: 64 * GiB, cpus: 2, joinedAt: Date.now(), lastSeenAt: null }
  runtime = new ClusterRuntime({ managerSocket: lab.a.socket, instanceId, subnetPool: '10.232.0.0/16', pidsLimit: 128, advertiseAddress: lab.a.address, nodes: () => [node], link, log })
}, 120_000)

afterAll(async () => {
  await lab?.stop()
}, 60_000)

describe('a site on a node', () => {
  it('stopped for a restart is stopped on its node at once and replaced by Swarm, its service unchanged', async () => {
    await runtime.placeOn('rs', 'nb')
    const first = await runtime.ensureSite(spec('rs'))
    const [old] = await running('rs')
    expect(old).toBe(first.containerId)
    const before = await service('rs')
    const started = performance.now()
    await runtime.stopSite('rs', { forRestart: true })
    const stopMs = performance.now() - started
    expect(await running('rs')).not.toContain(old)
    const again = await runtime.ensureSite(spec('rs'))
    const restartMs = performance.now() - started
    expect(again.containerId).not.toBe(old)
    expect(await running('rs')).toEqual([again.containerId])
    // No update of the service: still one replica, the same version.
    expect(await service('rs')).toBe(before)
    console.log(`restart on the node: stopped in ${Math.round(stopMs)} ms, running again in ${Math.round(restartMs)} ms`)
    expect(stopMs).toBeLessThan(1_500)
  }, 120_000)

  it('placed on another node has its old container stopped well before Swarm would reach it', async () => {
    const [old] = await running('rs')
    expect(old).toBeDefined()
    const started = performance.now()
    await runtime.placeOn('rs', CONTROL_NODE)
    const ms = performance.now() - started
    expect(await running('rs')).toEqual([])
    console.log(`placeOn: the old container stopped in ${Math.round(ms)} ms`)
    expect(ms).toBeLessThan(2_000)
    await runtime.removeSite('rs', { volume: true })
  }, 120_000)
})
