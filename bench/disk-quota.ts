/**
 * `bun run bench:disk [--baseline /tmp/berth-base] [--pairs 5] [--rounds 200] [--purchases 8] [--only=files|edge|provision] [--quick]`:
 * what a site's disk quota (issue 38: each site's home an ext4 filesystem of its plan's disk_gb
 * in a sparse image on a loop device) costs, against the base binary (the commit before it, whose
 * homes are plain Docker volumes), the two compiled binaries measured in the same run.
 *
 * Both Berths run side by side for the whole run (each on its own data folder and loopback port,
 * DNS off, the same site images berth/static:1 and berth/php:1), and the measurements alternate
 * between them in A/B pairs, the order swapped each pair, so the shared machine's noise hits both
 * alike; each figure is the median over the pairs of the per-pair ratio.
 *
 * 1. Files API: POST files/write/ of a 4 KB text file, then GET files/read/ of it, timed together,
 *    on a purchased static site (svc_starter_monthly); `rounds` per side per pair, round by round
 *    interleaved, after 20 thrown away. Ratio: the base's p50 / this tree's p50 (higher is better).
 * 2. Edge: wrk (bench/wrk.ts's settings: -t2 -c64, 3 s warm-up, 10 s) through Berth's own listener
 *    with the site's Host header, on a PHP site (svc_business_monthly, berth/php:1: nginx keeps
 *    connections alive, as bench/edge.ts's php scenario; busybox's one connection per request
 *    fills TIME_WAIT) serving a 2 KB public/index.html; its nginx writes its access log to the
 *    site's disk. Ratio: this tree's req/s / the base's.
 * 3. Checkout to serving: `purchases` purchases per binary (static site, alternating), from the
 *    checkout's complete call (direct test payment) to the first 200 through the edge, as
 *    bench/provision.ts measures; and from the update that sets requested_slug (which makes the
 *    site's network and, in this tree, its disk in the background) to the same 200; then as many
 *    again with a buyer's 2 s pause between the update and the complete call (the disk made in the
 *    background meanwhile). Figure: p50, this tree minus the base, in ms.
 *
 * Targets (issue 38): ratios 1 and 2 at least 0.95, 3 at most +100 ms. Everything made is removed
 * at the end (sites' disks unmounted and their images removed through removeEngineInstance), and
 * the run checks that none of its volumes is left mounted or on a loop device.
 */
import { spawnSync } from 'bun'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { cleanup, snapshotBinary, startBerth, tempDir, waitFor, type RunningBerth } from './processes'
import { buySite, instanceOf, removeSites } from './sites'
import { processTicks, ticksToMicros } from './cpu-contention'
import { median } from './stats'
import { measure, warmUp, WRK_SETTINGS, wrkInstalled, type WrkResult } from './wrk'
import { docker } from '../test/helpers/sites'

const TARGETS = { filesRatio: 0.95, edgeRatio: 0.95, provisionExtraMs: 100 }
const WARMUP_ROUNDS = 20
/** A buyer's pause between naming the site (the checkout's update) and paying. */
const PAUSE_MS = 2000

const argv = process.argv.slice(2)
const arg = (name: string, fallback: number) => (argv.includes(name) ? Number(argv[argv.indexOf(name) + 1]) || fallback : fallback)
const quick = argv.includes('--quick')
const baseline = argv.includes('--baseline') ? argv[argv.indexOf('--baseline') + 1]! : '/tmp/berth-base'
// 5 by default: on the shared machine 3 pairs' edge ratios ranged 0.70 to 1.28 from run to run.
const pairs = Math.max(3, arg('--pairs', 5))
const rounds = arg('--rounds', quick ? 40 : 200)
const purchases = arg('--purchases', 8)
const only = argv.find((a) => a.startsWith('--only='))?.slice('--only='.length)
if (only && !['files', 'edge', 'provision'].includes(only)) throw new Error('--only= takes files, edge or provision')
if (quick) Object.assign(WRK_SETTINGS, { warmupSeconds: 1, durationSeconds: 2 })

type Side = 'this' | 'base'
interface Berth { side: Side; berth: RunningBerth; dataDir: string; port: number }
interface Site { slug: string; key: string }
interface Timing { fromUpdate: number; fromComplete: number }

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!
const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('')
const f0 = (n: number) => n.toFixed(0)
const f2 = (n: number) => n.toFixed(2)
const describe = (r: EdgeRun) => `${f0(r.wrk.requestsPerSec)} (p50 ${f2(r.wrk.p50Ms)} ms, others ${f0(r.wrk.contention.otherPercent)}%, CPU per request: Berth ${f0(r.wrk.serverCpuMicros)} µs, site container ${f0(r.containerMicros)} µs, kernel threads ${f0(r.kernelMicros)} µs)`
const signed = (n: number) => `${n >= 0 ? '+' : ''}${f0(n)}`

async function start(side: Side, binary: string): Promise<Berth> {
  const dataDir = tempDir(`berth-bench-disk-${side}-`)
  const ssh = 20_000 + Math.floor(Math.random() * 40_000)
  const berth = await startBerth(dataDir, 2, {
    BERTH_DNS_LISTEN: 'off',
    BERTH_SERVER_LOG_LEVEL: 'info',
    BERTH_SSH_PORT_RANGE: `${ssh}-${ssh + 49}`,
    BERTH_RATE_LIMITS_CHECKOUT_CREATE: '10000/hour',
    BERTH_RATE_LIMITS_CHECKOUT_POLL: '100000/minute',
  }, binary)
  return { side, berth, dataDir, port: Number(new URL(berth.url).port) }
}

async function call(b: Berth, site: Site, method: string, path: string, body?: unknown): Promise<{ ms: number; json: any }> {
  const started = performance.now()
  const res = await fetch(`${b.berth.url}/api/v1/sites/${site.slug}/files/${path}`, {
    method,
    headers: { authorization: `Bearer ${site.key}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const json = await res.json()
  const ms = performance.now() - started
  if (res.status !== 200) throw new Error(`${b.side}: ${method} files/${path}: ${res.status} ${JSON.stringify(json)}`)
  return { ms, json }
}

async function writeRead(b: Berth, site: Site): Promise<number> {
  const content = text(4096)
  const written = await call(b, site, 'POST', 'write/', { path: 'public/bench.txt', content })
  const read = await call(b, site, 'GET', 'read/?path=public/bench.txt')
  if (read.json.data.content !== content) throw new Error(`${b.side}: files/read/ did not give back what was written`)
  return written.ms + read.ms
}

/** One pair of the files API: `rounds` write+reads per side, interleaved, `first` going first each round. */
async function filesPair(first: Berth, second: Berth, sites: Map<Side, Site>, warm: number): Promise<Map<Side, number>> {
  const times = new Map<Side, number[]>([['this', []], ['base', []]])
  for (let i = 0; i < warm + rounds; i++) {
    for (const b of [first, second]) {
      const ms = await writeRead(b, sites.get(b.side)!)
      if (i >= warm) times.get(b.side)!.push(ms)
    }
  }
  return new Map([...times].map(([side, ms]) => [side, percentile(ms, 50)]))
}

interface EdgeRun { wrk: WrkResult; containerMicros: number; kernelMicros: number }

async function edgeRun(b: Berth, site: Site): Promise<EdgeRun> {
  // Capitalised: wrk adds its own Host unless one named exactly 'Host' is given.
  const target = { name: `${b.side} ${site.slug}`, url: `${b.berth.url}/`, pid: b.berth.proc.pid, headers: { Host: `${site.slug}.localhost:${b.port}` } }
  await warmUp(target)
  const [container] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(b.dataDir)}`, `dev.berth.site-slug=${site.slug}`] } })
  const before = { container: containerNanos(container!.Id), kernel: kernelThreadTicks() }
  const wrk = await measure(target)
  if (wrk.non2xx > 0) throw new Error(`${b.side}: ${wrk.non2xx} non-2xx answers through the edge`)
  return {
    wrk,
    containerMicros: (containerNanos(container!.Id) - before.container) / 1000 / wrk.requests,
    kernelMicros: ticksToMicros(kernelThreadTicks() - before.kernel) / wrk.requests,
  }
}

/** CPU time of a container (its cgroup, v1 or v2), in ns; NaN where neither is found. */
function containerNanos(id: string): number {
  try {
    return Number(readFileSync(`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, 'utf8'))
  } catch {
    try {
      return Number(/usage_usec (\d+)/.exec(readFileSync(`/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`, 'utf8'))![1]) * 1000
    } catch {
      return Number.NaN
    }
  }
}

/**
 * CPU ticks of the kernel's threads (kthreadd's children): the loop devices' workers and the
 * journal threads of the sites' filesystems among them, which no process's time includes.
 */
function kernelThreadTicks(): number {
  let ticks = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1] === '2') ticks += processTicks(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return ticks
}

/** One purchase of a static site: times from the slug's update and from the complete call to the first 200 through the edge. */
async function purchase(b: Berth, n: number, pauseMs: number): Promise<Timing> {
  const slug = `bd${b.side[0]}${n}-${Math.random().toString(36).slice(2, 7)}`
  const post = (path: string, body: unknown, secret?: string) =>
    fetch(`${b.berth.url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret ? { 'x-checkout-secret': secret } : {}) }, body: JSON.stringify(body) })
  const created = (await (await post('/acp/checkouts/', { sku: 'svc_starter_monthly' })).json()).data
  const updating = performance.now()
  const updated = await post(`/acp/checkouts/${created.id}/update/`, { requested_slug: slug }, created.checkout_secret)
  if (updated.status !== 200) throw new Error(`${b.side}: update: ${updated.status} ${await updated.text()}`)
  await Bun.sleep(pauseMs)
  const completing = performance.now()
  const done = await post(`/acp/checkouts/${created.id}/complete/`, { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }, created.checkout_secret)
  if (done.status !== 201) throw new Error(`${b.side}: complete: ${done.status} ${await done.text()}`)
  await waitFor(async () => (await fetch(`${b.berth.url}/`, { headers: { host: `${slug}.localhost:${b.port}` } })).status === 200, 60_000, 2).catch((err) => {
    throw new Error(`${b.side}: ${slug} did not serve within 60 s of the complete call; the end of its Berth's log:\n${logTail(b)}`, { cause: err })
  })
  const served = performance.now()
  return { fromUpdate: served - updating, fromComplete: served - completing }
}

/** The last lines of a Berth's own log (bench/processes.ts's startBerth writes it into the data folder). */
function logTail(b: Berth): string {
  const read = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8') : '')
  const log = join(b.dataDir, `bench-${b.port}.log`)
  return (read(log) + read(`${log}.err`)).trimEnd().split('\n').slice(-40).join('\n')
}

/** The volumes of both instances, to check after the cleanup that none is left mounted or on a loop device. */
async function volumesOf(berths: Berth[]): Promise<string[]> {
  const names: string[] = []
  for (const b of berths) {
    const instance = instanceOf(b.dataDir)
    if (!instance) continue
    for (const v of (await docker.listVolumes({ filters: { label: [`dev.berth.instance=${instance}`] } })).Volumes ?? []) names.push(v.Name)
  }
  return names
}

function leftBehind(volumes: string[]): string[] {
  const loops = spawnSync(['losetup', '-a'], { stdout: 'pipe', stderr: 'ignore' }).stdout.toString().split('\n')
  const mounts = readFileSync('/proc/mounts', 'utf8').split('\n')
  return [...loops, ...mounts].filter((line) => volumes.some((v) => line.includes(`/volumes/${v}/`)))
}

async function main() {
  if (!wrkInstalled()) throw new Error('wrk is not installed; apt-get install wrk')
  if (!existsSync(baseline)) throw new Error(`no base binary at ${baseline} (pass --baseline PATH: the commit before issue 38, b5e6fff, built)`)
  const berths: Berth[] = []
  // On Ctrl-C too, the sites' disks are unmounted and removed before the process ends.
  let finishing: Promise<void> | undefined
  const finish = () => (finishing ??= removeAll(berths))
  process.once('exit', cleanup)
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) process.once(signal, () => void finish().finally(() => process.exit(code)))
  const binary = snapshotBinary()
  const loadBefore = loadavg().map(f2).join(' ')
  try {
    berths.push(await start('this', binary))
    berths.push(await start('base', baseline))
    const [mine, base] = berths as [Berth, Berth]
    const plans = (await (await fetch(`${mine.berth.url}/api/v1/plans/`)).json()).data
    const diskOf = (sku: string) => plans.find((p: any) => p.slug === sku.replace(/^svc_|_monthly$/g, ''))?.features.disk_gb ?? '?'
    // The sites measured: a static one for the files API, a PHP one for the edge, on each side.
    const filesSites = new Map<Side, Site>()
    const edgeSites = new Map<Side, Site>()
    const page = `<!doctype html><title>bench</title><p>${text(2000)}</p>\n`
    for (const b of berths) {
      filesSites.set(b.side, await buySite(b.berth.url, `bdf${b.side[0]}`))
      if (only && only !== 'edge') continue
      const php = await buySite(b.berth.url, `bde${b.side[0]}`, 'svc_business_monthly', 240_000)
      edgeSites.set(b.side, php)
      await call(b, php, 'POST', 'write/', { path: 'public/index.html', content: page })
      const res = await fetch(`${b.berth.url}/`, { headers: { host: `${php.slug}.localhost:${b.port}` } })
      if (res.status !== 200 || (await res.text()) !== page) throw new Error(`${b.side}: the PHP site does not serve public/index.html through the edge (${res.status})`)
    }
    console.log(`disk quota (issue 38): this tree ${binary} against the base ${baseline}; ${pairs} pairs; load average ${loadBefore}; nproc ${navigator.hardwareConcurrency}; ${new Date().toISOString()}`)

    const files: { this: number; base: number; ratio: number }[] = []
    const edge: { this: EdgeRun; base: EdgeRun; ratio: number }[] = []
    for (let pair = 0; pair < pairs; pair++) {
      const [first, second] = pair % 2 === 0 ? [mine, base] : [base, mine]
      if (!only || only === 'files') {
        const p50 = await filesPair(first, second, filesSites, WARMUP_ROUNDS)
        files.push({ this: p50.get('this')!, base: p50.get('base')!, ratio: p50.get('base')! / p50.get('this')! })
        console.log(`  pair ${pair + 1} files write+read p50: this ${f2(p50.get('this')!)} ms, base ${f2(p50.get('base')!)} ms, base/this ${f2(files.at(-1)!.ratio)}`)
      }
      if (!only || only === 'edge') {
        const runs = new Map<Side, EdgeRun>()
        for (const b of [first, second]) runs.set(b.side, await edgeRun(b, edgeSites.get(b.side)!))
        const [t, bs] = [runs.get('this')!, runs.get('base')!]
        edge.push({ this: t, base: bs, ratio: t.wrk.requestsPerSec / bs.wrk.requestsPerSec })
        console.log(`  pair ${pair + 1} edge req/s: this ${describe(t)}; base ${describe(bs)}; this/base ${f2(edge.at(-1)!.ratio)}`)
      }
    }

    // Straight after the update (as bench/provision.ts), then with a buyer's pause between naming
    // the site and paying, in which the site's network and disk are made in the background.
    const bought = new Map<string, Timing[]>()
    for (const pause of !only || only === 'provision' ? [0, PAUSE_MS] : []) {
      for (let i = 0; i < purchases; i++) {
        for (const b of i % 2 === 0 ? [mine, base] : [base, mine]) {
          const t = await purchase(b, i, pause)
          bought.set(`${b.side}${pause}`, [...(bought.get(`${b.side}${pause}`) ?? []), t])
          console.log(`  purchase ${i + 1} ${b.side.padEnd(4)} pause ${pause} ms: update → 200 ${f0(t.fromUpdate)} ms, complete → 200 ${f0(t.fromComplete)} ms`)
        }
      }
    }

    console.log(`\nDisk quota (issue 38), this tree against the base, ${pairs} alternating pairs (medians of the per-pair ratios); load average ${loadBefore} before, ${loadavg().map(f2).join(' ')} after`)
    const verdicts: [string, boolean][] = []
    if (files.length > 0) {
      const ratio = median(files.map((r) => r.ratio))
      console.log(`  files API 4 KB write+read p50 (${rounds} rounds per side per pair, static site, disk_gb ${diskOf('svc_starter_monthly')}): this ${f2(median(files.map((r) => r.this)))} ms, base ${f2(median(files.map((r) => r.base)))} ms; base p50 / this p50 (higher is better) ${f2(ratio)} [${files.map((r) => f2(r.ratio)).join(', ')}]`)
      verdicts.push([`files ratio >= ${TARGETS.filesRatio}`, ratio >= TARGETS.filesRatio])
    }
    if (edge.length > 0) {
      const ratio = median(edge.map((r) => r.ratio))
      const side = (s: Side) => `${f0(median(edge.map((r) => r[s].wrk.requestsPerSec)))} req/s (CPU per request: site container ${f0(median(edge.map((r) => r[s].containerMicros)))} µs, kernel threads ${f0(median(edge.map((r) => r[s].kernelMicros)))} µs)`
      console.log(`  edge (wrk -t${WRK_SETTINGS.threads} -c${WRK_SETTINGS.connections} ${WRK_SETTINGS.durationSeconds} s, PHP site, 2 KB page, disk_gb ${diskOf('svc_business_monthly')}): this ${side('this')}, base ${side('base')}; req/s this/base ${f2(ratio)} [${edge.map((r) => f2(r.ratio)).join(', ')}]`)
      // Less exposed to the neighbours than req/s: the CPU each request cost, wherever it ran.
      const cpu = (r: EdgeRun) => r.wrk.serverCpuMicros + r.containerMicros + r.kernelMicros
      console.log(`  edge CPU per request (Berth + site container + kernel threads): this ${f0(median(edge.map((r) => cpu(r.this))))} µs, base ${f0(median(edge.map((r) => cpu(r.base))))} µs; base/this (higher is better) ${f2(median(edge.map((r) => cpu(r.base) / cpu(r.this))))}`)
      verdicts.push([`edge ratio >= ${TARGETS.edgeRatio}`, ratio >= TARGETS.edgeRatio])
    }
    if (bought.size > 0) {
      const p = (side: Side, pause: number, key: keyof Timing) => percentile(bought.get(`${side}${pause}`)!.map((t) => t[key]), 50)
      const diff = (pause: number, key: keyof Timing) => `p50 this ${f0(p('this', pause, key))} ms, base ${f0(p('base', pause, key))} ms, this - base ${signed(p('this', pause, key) - p('base', pause, key))} ms`
      console.log(`  checkout complete → first 200 (${purchases} purchases each, static site, complete right after the update): ${diff(0, 'fromComplete')}`)
      console.log(`  update (requested_slug) → first 200, same purchases: ${diff(0, 'fromUpdate')}`)
      console.log(`  complete → first 200 with ${PAUSE_MS} ms between the update and the complete call: ${diff(PAUSE_MS, 'fromComplete')}`)
      verdicts.push([`checkout to serving <= +${TARGETS.provisionExtraMs} ms`, p('this', 0, 'fromComplete') - p('base', 0, 'fromComplete') <= TARGETS.provisionExtraMs])
    }
    console.log(`  ${verdicts.map(([name, ok]) => `${name}: ${ok ? 'PASS' : 'FAIL'}`).join('   ')}`)
    if (verdicts.some(([, ok]) => !ok)) process.exitCode = 1
  } finally {
    await finish()
  }
}

/** Stops both Berths and removes every site they made with its disk; fails the run if any volume is left mounted or on a loop device. */
async function removeAll(berths: Berth[]): Promise<void> {
  for (const b of berths) await b.berth.stop()
  const volumes = await volumesOf(berths)
  for (const b of berths) await removeSites(b.dataDir)
  const left = leftBehind(volumes)
  if (left.length > 0) {
    console.error(`left behind (mounts or loop devices of this run's volumes):\n${left.join('\n')}`)
    process.exitCode = 1
  } else console.log(`  cleanup: ${volumes.length} volumes removed, none left mounted or on a loop device`)
  cleanup()
}

await main()
