import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../../lib/logger'
import { startLab, type Lab } from '../../../../test/lab-swarm/lab'
import { slowSocket, type SlowSocket } from '../../../../test/helpers/slow-socket'
import { CONTROL_NODE, nodeHomePath, type ClusterNode, type NodeLink } from '../../cluster/types'
import { IMAGES } from '../images'
import { siteNames } from '../site-container'
import type { SiteSpec } from '../types'
import { ClusterRuntime } from './cluster-runtime'

// Where a moved site's home is looked up (SiteRuntime.homePath, cached): a move's restore writes
// the site's files there right after the switch (domain/cluster/site-transfer.ts). On a loaded
// machine, a lookup by someone else during the switch (the edge's access log flushes every
// 250 ms, for the probe's requests the site served just before) found the node the site was
// leaving and kept it: the restore then filled the old node's volume, removed at the end of the
// move, and the site came up on its new node with the image's default page (test/cluster.e2e's
// "moves a site ... and back", once in two loaded runs). Here the manager's socket is a
// SlowSocket (test/helpers/slow-socket.ts): the real engines, with one call held so that the
// lookup lands in that window every time.
const GiB = 1024 ** 3
const instanceId = `t${Math.random().toString(36).slice(2, 8)}`
const log = memoryLogger()
let lab: Lab
let a: Docker
let manager: SlowSocket
let runtime: ClusterRuntime
let node: ClusterNode

const link: NodeLink = {
  engineOptions: () => ({ socketPath: lab.b.socket }),
  async fetch(_node, _path, init) {
    return (init?.method ?? 'GET') === 'PUT' ? Response.json({ port: 41001 }) : new Response(null, { status: 204 })
  },
}

function spec(slug: string): SiteSpec {
  return { siteId: `id-${slug}`, slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null }
}

const SERVICE_UPDATE = /^POST \S*\/services\/\S+\/update/

beforeAll(async () => {
  lab = await startLab([IMAGES.static])
  a = new Docker({ socketPath: lab.a.socket })
  manager = await slowSocket(lab.a.socket, `${lab.a.dir}/slow.sock`)
  node = { id: 'nb', name: 'b', address: lab.b.address, agentPort: 7710, swarmNodeId: lab.b.swarmNodeId, certFingerprint: 'x', certSerial: '1', state: 'active', memoryBytes: 64 * GiB, cpus: 2, joinedAt: Date.now(), lastSeenAt: null }
  runtime = new ClusterRuntime({ managerSocket: manager.path, instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 128, advertiseAddress: lab.a.address, nodes: () => [node], link, log })
}, 120_000)

afterAll(async () => {
  await manager?.close()
  await lab?.stop()
}, 120_000)

describe('the home of a site moved between nodes', () => {
  const slug = 'mvh1'
  const volume = siteNames(instanceId, slug).volume
  const onB = nodeHomePath('nb', volume)
  const controlHome = async () => (await a.getVolume(volume).inspect()).Mountpoint

  it('is the new node\'s once the switch is done, though it was looked up on the old one during the switch', async () => {
    await runtime.placement.placeOn(slug, 'nb')
    await runtime.ensureSite(spec(slug))
    expect(await runtime.homePath(slug)).toBe(onB)
    // The move back, as SiteTransfer's switch does it: placeOn, the volume made there, then the restore asks.
    const held = manager.hold(SERVICE_UPDATE, 800)
    const switching = runtime.placement.placeOn(slug, CONTROL_NODE)
    await held
    // While the service still names B (its update held): the access log's flush, say.
    expect(await runtime.homePath(slug)).toBe(onB)
    await switching
    await runtime.placement.prepareSite({ siteId: `id-${slug}`, slug, diskGb: 1 })
    expect(await runtime.homePath(slug)).toBe(await controlHome())
  }, 120_000)

  it('is the new node\'s when a lookup that began before the switch ends after it', async () => {
    const slug = 'mvh2'
    const volume = siteNames(instanceId, slug).volume
    const onB = nodeHomePath('nb', volume)
    const controlHome = async () => (await a.getVolume(volume).inspect()).Mountpoint
    await runtime.placement.placeOn(slug, CONTROL_NODE)
    await runtime.ensureSite(spec(slug))
    expect(await runtime.homePath(slug)).toBe(await controlHome())
    const update = manager.hold(SERVICE_UPDATE, 300)
    const switching = runtime.placement.placeOn(slug, 'nb')
    await update
    // A lookup while the update is held: it finds the service on the control node, and its
    // volume inspect there lands only after the switch is over.
    const inspect = manager.hold(/^GET \S*\/volumes\//, 3_000)
    const late = runtime.homePath(slug)
    await inspect
    await switching
    await runtime.placement.prepareSite({ siteId: `id-${slug}`, slug, diskGb: 1 })
    // Its caller gets what it found (it asked before the switch); nobody after it does.
    expect(await late).toBe(await controlHome())
    expect(await runtime.homePath(slug)).toBe(onB)
  }, 120_000)
})
