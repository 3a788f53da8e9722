/**
 * `bun run bench:exec [--rounds 200] [--image static|php]`: the exec API (issue 26) on the
 * compiled binary, with one purchased site on the real Docker engine (static by default; `php`
 * buys a vps site).
 *
 * - Berth: `POST /sites/{slug}/exec/` of `{"command": ["true"]}`, from the request to the parsed
 *   answer; everything the API does (key, site, limits, audit, the wrapper that puts the command
 *   in a process group of its own with its watchdog).
 * - Reference, same run, same container, interleaved round by round so that load from neighbours
 *   on the shared machine hits both alike: `docker exec CONTAINER true` from the CLI, spawned to
 *   its exit (what an admin or a script on the box would type).
 * Sequential, `rounds` of each after 10 unrecorded warm-up rounds; p50 and p95 and their ratio.
 * Goal: Berth faster than the CLI (ratio p50 below 1).
 */
import Docker from 'dockerode'
import { spawn } from 'bun'
import { join } from 'node:path'
import { contention, processTicks, readCpuTimes } from './cpu-contention'
import { cleanup, cleanupOnExit, snapshotBinary, startBerth, tempDir, waitFor } from './processes'
import { buySite, instanceOf, removeSites } from './sites'

const WARM_UP = 10
/** CLI rounds that may fail (and be taken again) before the run gives up. */
const MAX_REDONE = 5
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined)
const rounds = Number(arg('--rounds')) || 200
const image = arg('--image') === 'php' ? 'php' : 'static'
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!

async function main() {
  cleanupOnExit()
  snapshotBinary()
  const dataDir = tempDir('berth-bench-exec-')
  const berth = await startBerth(dataDir)
  try {
    const { slug, key } = await buySite(berth.url, 'bench-exec', image === 'php' ? 'svc_business_monthly' : 'svc_starter_monthly')
    const [container] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(dataDir)}`, `dev.berth.site-slug=${slug}`] } })
    if (!container) throw new Error(`no container for ${slug}`)
    const viaApi = () => execTrue(`${berth.url}/api/v1/sites/${slug}/exec/`, key)
    const viaCli = () => dockerExecTrue(container.Id)
    const cpuBefore = readCpuTimes()
    const ticksBefore = processTicks(berth.proc.pid) + processTicks(process.pid)
    const times = { berth: [] as number[], cli: [] as number[] }
    let redone = 0
    for (let i = 0; i < rounds + WARM_UP; i++) {
      const b = await viaApi()
      const c = await viaCli().catch((err: Error) => err)
      // The CLI fails where the API waits: a freeze of the site (its first backup, a snapshot
      // of a neighbour's) answers "container is paused". The round is taken again.
      if (c instanceof Error) {
        if (++redone > MAX_REDONE) throw c
        console.warn(`round ${i} taken again: ${c.message}`)
        i--
        await Bun.sleep(200)
        continue
      }
      if (i >= WARM_UP) {
        times.berth.push(b)
        times.cli.push(c)
      }
    }
    const busy = contention(cpuBefore, readCpuTimes(), processTicks(berth.proc.pid) + processTicks(process.pid) - ticksBefore)
    report(times, busy.otherPercent)
  } finally {
    await berth.stop()
    await removeSites(dataDir)
    cleanup()
  }
}

/** One exec of `true` through the API, to its parsed answer (which must say exit code 0). */
async function execTrue(url: string, key: string): Promise<number> {
  const started = performance.now()
  const res = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{"command":["true"]}' })
  const json = (await res.json()) as { data?: { exit_code: number } }
  const ms = performance.now() - started
  if (res.status !== 200 || json.data?.exit_code !== 0) throw new Error(`exec: ${res.status} ${JSON.stringify(json)}`)
  return ms
}

/** One `docker exec --user 1000:1000 CONTAINER true` from the CLI, to its exit. */
async function dockerExecTrue(containerId: string): Promise<number> {
  const started = performance.now()
  const proc = spawn(['docker', 'exec', '--user', '1000:1000', containerId, 'true'], { stdout: 'ignore', stderr: 'pipe' })
  const code = await proc.exited
  const ms = performance.now() - started
  if (code !== 0) throw new Error(`docker exec exited with ${code}: ${(await new Response(proc.stderr).text()).trim()}`)
  return ms
}

function report(times: { berth: number[]; cli: number[] }, otherPercent: number) {
  const f = (ms: number) => `${ms.toFixed(1)} ms`
  const b = { p50: percentile(times.berth, 50), p95: percentile(times.berth, 95) }
  const c = { p50: percentile(times.cli, 50), p95: percentile(times.cli, 95) }
  console.log(`\nExec round trip of \`true\` on a ${image} site, ${times.berth.length} rounds each, sequential, interleaved`)
  console.log(`  berth POST exec/        p50 ${f(b.p50)}  p95 ${f(b.p95)}`)
  console.log(`  docker exec (CLI)       p50 ${f(c.p50)}  p95 ${f(c.p95)}`)
  console.log(`  ratio berth / CLI       p50 ${(b.p50 / c.p50).toFixed(2)}x  p95 ${(b.p95 / c.p95).toFixed(2)}x`)
  console.log(`  machine                 other processes used ${otherPercent.toFixed(0)}% of the CPU during the rounds (nproc ${navigator.hardwareConcurrency})`)
  console.log(`  berth faster than the CLI (p50): ${b.p50 < c.p50 ? 'PASS' : 'FAIL'}`)
  if (b.p50 >= c.p50) process.exitCode = 1
}

await main()
