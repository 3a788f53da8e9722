/**
 * `bun bench/runtime-shapes.ts [rounds]`: the two ways a single box could run a site (issue 37,
 * docs/architecture.md "One site-container implementation"), on one private engine (test/lab-swarm's
 * node A, a one-node swarm's manager): a container (DockerRuntime) against a Swarm service
 * (ClusterRuntime with no other node), alternating: a new site's start, an exec, a stop, the
 * stopped site's start; medians (min, max) in ms. Needs root and what test/lab-swarm needs.
 */
import { startLab, stopLab } from '../test/lab-swarm/lab'
import type { NodeLink } from '../src/drivers/cluster/types'
import { DockerRuntime } from '../src/drivers/runtime/docker'
import { IMAGES } from '../src/drivers/runtime/images'
import { ClusterRuntime } from '../src/drivers/runtime/swarm/cluster-runtime'
import type { ContainerRuntime, SiteSpec } from '../src/drivers/runtime/types'
import { memoryLogger } from '../src/lib/logger'

const rounds = Number(process.argv[2] ?? 5)
const log = memoryLogger()
const lab = await startLab([IMAGES.static])
try {
  const instanceId = `rtms${Math.random().toString(36).slice(2, 5)}`
  const link: NodeLink = { engineOptions: () => ({ socketPath: lab.a.socket }), fetch: async () => new Response(null, { status: 204 }) }
  const runtimes: Record<string, ContainerRuntime> = {
    container: new DockerRuntime({ socketPath: lab.a.socket, instanceId: `${instanceId}c`, subnetPool: '10.238.0.0/16', pidsLimit: 128, log }),
    service: new ClusterRuntime({ managerSocket: lab.a.socket, instanceId: `${instanceId}s`, subnetPool: '10.237.0.0/16', pidsLimit: 128, advertiseAddress: lab.a.address, nodes: () => [], link, log }),
  }
  const times: Record<string, Record<string, number[]>> = { container: {}, service: {} }
  const t = async (kind: string, k: string, fn: () => Promise<unknown>) => { const s = performance.now(); await fn(); (times[kind]![k] ??= []).push(performance.now() - s) }
  for (const rt of Object.values(runtimes)) await rt.ping()
  for (let i = 0; i < rounds; i++) {
    for (const [kind, rt] of Object.entries(runtimes)) {
      const slug = `s${i}${Math.random().toString(36).slice(2, 6)}`
      const spec: SiteSpec = { siteId: crypto.randomUUID(), slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null }
      try {
        await t(kind, 'start_new', () => rt.ensureSite(spec))
        await t(kind, 'exec', () => rt.exec(slug, ['true']))
        await t(kind, 'stop', () => rt.stopSite(slug))
        await t(kind, 'start_stopped', () => rt.ensureSite(spec))
      } finally {
        await rt.removeSite(slug, { volume: true })
      }
    }
  }
  const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return Math.round(s[Math.floor(s.length / 2)]!) }
  for (const [kind, m] of Object.entries(times)) console.log(kind, JSON.stringify(Object.fromEntries(Object.entries(m).map(([k, v]) => [k, { median: med(v), min: Math.round(Math.min(...v)), max: Math.round(Math.max(...v)) }]))))
} finally {
  await stopLab(lab.id)
}
process.exit(0)
