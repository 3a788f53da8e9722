/**
 * `bun run bench:deploy [--rounds 20] [--mb 20] [--image static|php]`: what recording a
 * deployment's files (issue 27, rollback) costs a deploy, on the compiled binary and the real
 * Docker engine.
 *
 * Two Berths from the same binary, each with one purchased site holding the same files (`mb` MB
 * of random bytes, which zstd cannot shrink: the worst case, in 1 MB files, plus a page):
 * - recording: the default `archives.deployments_kept` (5): each deploy records the home first;
 * - reference: `archives.deployments_kept = 0`: deploys as before the feature.
 * Rounds are interleaved (one deploy on each per round) so load from neighbours on the shared
 * machine hits both alike. A deploy is timed from the POST to the poll that sees it finished
 * (10 ms polls), and by its own started_at..finished_at. Also printed: how long the site was
 * frozen for the copy (the `frozen_ms` Berth logs), and one rollback's time on the recording side.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { median } from './stats'
import { cleanup, cleanupOnExit, snapshotBinary, startBerth, tempDir, waitFor, type RunningBerth } from './processes'
import { buySite, removeSites } from './sites'

const arg = (name: string) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined)
const rounds = Number(arg('--rounds')) || 20
const mb = Number(arg('--mb')) || 20
const image = arg('--image') === 'php' ? 'php' : 'static'
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!

interface Side { name: string; berth: RunningBerth; dataDir: string; slug: string; key: string; wall: number[]; server: number[] }

async function main() {
  cleanupOnExit()
  snapshotBinary()
  const sides: Side[] = []
  try {
    for (const [name, kept] of [['recording', '5'], ['reference', '0']] as const) {
      const dataDir = tempDir(`berth-bench-deploy-${name}-`)
      const berth = await startBerth(dataDir, 2, { BERTH_ARCHIVES_DEPLOYMENTS_KEPT: kept })
      sides.push({ name, berth, dataDir, ...(await buySite(berth.url, 'bench-dep', image === 'php' ? 'svc_business_monthly' : 'svc_starter_monthly')), wall: [], server: [] })
    }
    const blob = () => Buffer.from(crypto.getRandomValues(new Uint8Array(1 << 20))).toString('base64')
    for (let i = 0; i < mb; i++) {
      const content = blob()
      for (const s of sides) await call(s, 'POST', 'files/upload/', { path: `public/blob-${i}.bin`, content_b64: content })
    }
    for (const s of sides) await call(s, 'POST', 'files/write/', { path: 'public/index.html', content: '<h1>bench</h1>' })
    for (const s of sides) await deploy(s) // warm-up, not recorded
    for (let i = 0; i < rounds; i++) {
      for (const s of i % 2 === 0 ? sides : [...sides].reverse()) {
        const d = await deploy(s)
        s.wall.push(d.wallMs)
        s.server.push(d.serverMs)
      }
    }
    const recording = sides[0]!
    const list = (await call(recording, 'GET', 'deployments/')).data as { id: string }[]
    const rollbackStarted = performance.now()
    const back = await call(recording, 'POST', `deployments/${list[1]!.id}/rollback/`)
    const rolled = await finished(recording, back.data.id)
    const rollbackMs = performance.now() - rollbackStarted
    report(sides, frozen(recording), { wallMs: rollbackMs, status: rolled.status })
  } finally {
    for (const s of sides) {
      await s.berth.stop()
      await removeSites(s.dataDir)
    }
    cleanup()
  }
}

async function call(s: Pick<Side, 'berth' | 'slug' | 'key'>, method: string, rest: string, body?: unknown) {
  const res = await fetch(`${s.berth.url}/api/v1/sites/${s.slug}/${rest}`, { method, headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  const json = (await res.json()) as { data: any }
  if (res.status !== 200) throw new Error(`${method} ${rest}: ${res.status} ${JSON.stringify(json)}`)
  return json
}

async function finished(s: Side, id: string) {
  for (;;) {
    const d = (await call(s, 'GET', `deployments/${id}/`)).data
    if (d.status === 'succeeded' || d.status === 'failed') return d
    await Bun.sleep(10)
  }
}

async function deploy(s: Side): Promise<{ wallMs: number; serverMs: number }> {
  const started = performance.now()
  const queued = (await call(s, 'POST', 'deploy/')).data
  const d = await finished(s, queued.id)
  const wallMs = performance.now() - started
  if (d.status !== 'succeeded') throw new Error(`deploy on ${s.name} ${d.status}: ${d.error}`)
  return { wallMs, serverMs: Date.parse(d.finished_at) - Date.parse(d.started_at) }
}

/** The `frozen_ms` of each record Berth logged (its log is in the data folder). */
function frozen(s: Side): number[] {
  const log = join(s.dataDir, `bench-${new URL(s.berth.url).port}.log`)
  return readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('deployment files recorded')).map((l) => Number(/frozen_ms"?[:=]\s*(\d+)/.exec(l)?.[1])).filter((n) => Number.isFinite(n))
}

function report(sides: Side[], frozenMs: number[], rollback: { wallMs: number; status: string }) {
  const f = (ms: number) => `${ms.toFixed(0)} ms`
  const [rec, ref] = sides as [Side, Side]
  console.log(`\nDeploy of a ${image} site holding ${mb} MB (random, incompressible), ${rounds} rounds each, interleaved`)
  for (const s of sides) {
    console.log(`  ${s.name.padEnd(10)} POST to finished  p50 ${f(median(s.wall))}  p95 ${f(percentile(s.wall, 95))}   started..finished p50 ${f(median(s.server))}`)
  }
  console.log(`  ratio recording / reference   p50 ${(median(rec.wall) / median(ref.wall)).toFixed(2)}x  (+${f(median(rec.wall) - median(ref.wall))})`)
  if (frozenMs.length) console.log(`  site frozen for the copy      p50 ${f(median(frozenMs))}  max ${f(Math.max(...frozenMs))}`)
  console.log(`  one rollback (recording side) ${f(rollback.wallMs)} POST to finished, ${rollback.status}`)
}

await main()
