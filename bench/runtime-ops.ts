/**
 * `bun bench/runtime-ops.ts <tree> [rounds]`: a single box's DockerRuntime as the source tree
 * <tree> has it (this one, or a worktree of an earlier commit: run both, alternating), on the
 * machine's engine: a new site's start (ensureSite), an exec, an inspect, a stop, the stopped
 * site's start; one line of medians in ms. Issue 37 compared the engine lookup (SiteRuntime)
 * with the DockerRuntime of the commit before (docs/architecture.md).
 */
import { join } from 'node:path'

const tree = process.argv[2] ?? join(import.meta.dirname, '..')
const rounds = Number(process.argv[3] ?? 8)
const { DockerRuntime } = await import(`${tree}/src/drivers/runtime/docker.ts`)
const log = { debug() {}, info() {}, warn() {}, error() {}, child() { return log } }
const instanceId = `rtmb${Math.random().toString(36).slice(2, 6)}`
const rt = new DockerRuntime({ socketPath: '/var/run/docker.sock', instanceId, subnetPool: '10.239.0.0/16', pidsLimit: 128, log })
const times: Record<string, number[]> = { start_new: [], exec: [], stop: [], start_stopped: [], inspect: [] }
const t = async (k: string, fn: () => Promise<unknown>) => { const s = performance.now(); await fn(); times[k]!.push(performance.now() - s) }
await rt.ping()
for (let i = 0; i < rounds; i++) {
  const slug = `rb${i}${Math.random().toString(36).slice(2, 6)}`
  const spec = { siteId: crypto.randomUUID(), slug, hostingType: 'shared', image: 'berth/static:1', memoryMb: 256, cpuCores: 1, pidsLimit: 128, diskGb: 5, sshPort: null }
  try {
    await t('start_new', () => rt.ensureSite(spec))
    await t('exec', () => rt.exec(slug, ['true']))
    await t('inspect', () => rt.inspectSite(slug))
    await t('stop', () => rt.stopSite(slug))
    await t('start_stopped', () => rt.ensureSite(spec))
  } finally {
    await rt.removeSite(slug, { volume: true })
  }
}
const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]! }
console.log(JSON.stringify({ tree, rounds, ...Object.fromEntries(Object.entries(times).map(([k, v]) => [k, Math.round(med(v) * 10) / 10])) }))
process.exit(0)
