/**
 * `bun run bench:cluster [--quick] [--image static|php] [--files-rounds N] [--binary PATH]`:
 * a site on a joined node against the same site on the control plane (issue 28), on the two-node lab (test/lab: two network namespaces,
 * each with a dockerd of its own, on a private /24), with a copy of the compiled dist/berth.
 *
 * 1. Join to first site served: the control plane starts in node A (cluster.enabled) and one
 *    site is bought there first, so the next one goes to the new node (placement ties go
 *    to the control plane, then the most free memory wins). Then, timed from the token request:
 *    `berth nodes token`, `berth node join` in node B (key, CSR, the join, `docker swarm join`),
 *    `berth node serve` until its port accepts, the purchase of a second site (placed on B: its
 *    image goes to B's engine, its Swarm service starts there, the agent opens its forward),
 *    until the first 200 through the control plane's edge with the site's Host header.
 * 2. Edge: both sites serve the same 2 KB public/index.html (same plan, svc_starter_monthly,
 *    berth/static:1). wrk on the host (-t2 -c64, 3 s warm-up, 3 rounds of 10 s, interleaved, the
 *    order swapped each round) reaches the control plane's listener on A's host-side address with
 *    `Host: {slug}.localhost:8080`. For the site on B the edge connects to the TCP port the agent
 *    opened on B's private address for it, which B's kernel rewrites to the container (a DNAT rule
 *    of the agent's; its listener relays when the rules cannot be set). Goal: for the site on B,
 *    requests/s at least 0.8 of the local site's and p50 no more than 1/0.8 of it (median of the
 *    per-round ratios).
 * 3. Files API: POST files/write/ of a 4 KB file then GET files/read/ of it, timed together,
 *    `rounds` (200) times per site after 10 thrown away, interleaved; p50 and p95, ratio B/local.
 *
 * Printed: a table, PASS/FAIL for the edge goal, the CPU time per request of the control plane
 * (its process tree) and of B's agent, and how much of the machine other processes used. The lab
 * (engines, namespaces, the control plane, the agent) is removed at the end, on failure and on
 * Ctrl-C (the lab's own exit handlers).
 */
import { spawn } from 'bun'
import { readFileSync } from 'node:fs'
import { buyDirect, waitForSite } from '../test/helpers/purchase'
import { startLab, type Lab } from '../test/lab/cluster-lab'
import { CONTROL_PORT, joinNode, startControlPlane, type ControlPlane, type JoinedNode } from '../test/lab/berth-cluster'
import { contention, microsToTicks, readCpuTimes, ticksToMicros, treeTicks } from './cpu-contention'
import { cleanupOnExit, snapshotBinary, track } from './processes'
import { median } from './stats'
import { parseWrk } from './wrk'

const WRK = { connections: 64, threads: 2, warmupSeconds: 3, durationSeconds: 10, rounds: 3 }
const FILES = { rounds: 200, warmup: 10 }
const TARGET_RATIO = 0.8
/** The plan of both sites: a static site (busybox httpd, one connection per request) or, with `--image php`, a vps site (nginx, kept-alive). */
const IMAGES = { static: { sku: 'svc_starter_monthly', image: 'berth/static:1' }, php: { sku: 'svc_business_monthly', image: 'berth/php:1' } } as const

const argv = process.argv.slice(2)
if (argv.includes('--quick')) {
  Object.assign(WRK, { warmupSeconds: 1, durationSeconds: 2, rounds: 1 })
  FILES.rounds = 20
}
const imageArg = argv.includes('--image') ? argv[argv.indexOf('--image') + 1] : 'static'
if (imageArg !== 'static' && imageArg !== 'php') {
  console.error('usage: bun bench/cluster.ts [--quick] [--image static|php] [--files-rounds N] [--binary PATH]')
  process.exit(2)
}
const { sku: SKU, image: IMAGE } = IMAGES[imageArg]
const filesRounds = Number(argv[argv.indexOf('--files-rounds') + 1])
if (argv.includes('--files-rounds') && filesRounds > 0) FILES.rounds = filesRounds

interface Site { slug: string; key: string; where: 'control' | 'B' }

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!
const ms = (n: number) => `${n.toFixed(n < 10 ? 2 : 0)} ms`

/** A 2 KB page, as bench/edge.ts serves. */
function benchPage(): string {
  const para = '<p>Berth cluster benchmark page. The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.</p>\n'
  let html = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>bench</title></head><body>\n'
  while (html.length < 2048 - 40) html += para
  return `${html.slice(0, 2048 - 16)}\n</body></html>\n`.padEnd(2048, ' ')
}

const text4k = () => Array.from({ length: 4096 }, () => String.fromCharCode(97 + Math.floor(Math.random() * 26))).join('')

/** A site API call with the site's key; throws on anything but 2xx. */
async function siteApi(control: ControlPlane, site: Site, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${control.url}/api/v1/sites/${site.slug}/${path}`, {
    method,
    headers: { authorization: `Bearer ${site.key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await res.text()
  if (res.status >= 300) throw new Error(`${method} ${path} on ${site.slug}: ${res.status} ${text}`)
  return JSON.parse(text)
}

/** GET / through the control plane's edge with the site's Host header: status and body. */
async function viaEdge(control: ControlPlane, slug: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${control.url}/`, { headers: { host: `${slug}.localhost:${CONTROL_PORT}` } })
  return { status: res.status, text: await res.text() }
}

/** Which node runs the site, as `berth nodes list --json` says. */
async function nodeOf(control: ControlPlane, slug: string): Promise<string | undefined> {
  const { json } = await control.cli(['nodes', 'list', '--json'])
  return (json?.nodes ?? json ?? []).find((n: { sites: string[] }) => n.sites.includes(slug))?.id
}

async function buy(control: ControlPlane, stem: string): Promise<{ slug: string; key: string }> {
  const slug = `${stem}${Math.random().toString(36).slice(2, 6)}`
  const key = (await buyDirect(control.url, { slug, sku: SKU })).data.api_key as string
  return { slug, key }
}

// ---- 1. join to first site served ----------------------------------------------------------

interface JoinFigures {
  /** Token request to the agent accepting connections (joinNode's joinMs). */
  joinMs: number
  /** The purchase's checkout calls (create, update, complete). */
  buyMs: number
  /** Purchase completed to the site leaving `provisioning` (GET /sites/{slug}/ polled every 50 ms). */
  activeMs: number
  /** Purchase completed to the first 200 through the edge (polled every 50 ms). */
  servedMs: number
  totalMs: number
}

async function joinAndServe(lab: Lab, control: ControlPlane): Promise<{ b: JoinedNode; site: Site; figures: JoinFigures }> {
  const t0 = performance.now()
  const b = await joinNode(lab, control, 'B')
  const t1 = performance.now()
  const bought = await buy(control, 'onb')
  const t2 = performance.now()
  let activeAt = 0
  const active = waitForSite(control.url, bought.key, bought.slug, 180_000).then((status) => {
    activeAt = performance.now()
    if (status !== 'active') throw new Error(`site ${bought.slug} ended ${status}`)
  })
  const deadline = Date.now() + 180_000
  for (;;) {
    const status = await viaEdge(control, bought.slug).then((r) => r.status, () => 0)
    if (status === 200) break
    if (Date.now() > deadline) throw new Error(`site ${bought.slug}: no 200 through the edge within 180 s (last ${status})`)
    await Bun.sleep(50)
  }
  const t3 = performance.now()
  await active
  const where = await nodeOf(control, bought.slug)
  if (where !== b.id) throw new Error(`the second site was placed on ${where}, not on node B (${b.id}): the figures would not be about a remote site`)
  return {
    b,
    site: { ...bought, where: 'B' },
    figures: { joinMs: b.joinMs, buyMs: t2 - t1, activeMs: activeAt - t2, servedMs: t3 - t2, totalMs: t3 - t0 },
  }
}

// ---- 2. edge throughput ---------------------------------------------------------------------

interface Run {
  rps: number
  p50Ms: number
  p99Ms: number
  requests: number
  non2xx: number
  socketErrors: number
  /** CPU time per request of the control plane's process tree and of B's agent, µs. */
  controlCpuUs: number
  agentCpuUs: number
  /** Share of the machine used by other processes (not wrk, the control plane, the agent) and stolen by the hypervisor. */
  otherPercent: number
  stealPercent: number
}

async function runWrk(control: ControlPlane, b: JoinedNode, site: Site, seconds: number): Promise<Run> {
  const pids = { control: control.berth.proc.pid, agent: b.agent.proc.pid }
  const before = { cpu: readCpuTimes(), control: treeTicks(pids.control), agent: treeTicks(pids.agent) }
  const args = ['wrk', `-t${WRK.threads}`, `-c${WRK.connections}`, `-d${seconds}s`, '--latency', '-H', `Host: ${site.slug}.localhost:${CONTROL_PORT}`, `${control.url}/`]
  const proc = track(spawn(args, { stdout: 'pipe', stderr: 'pipe' }))
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`wrk failed on the site on ${site.where} (exit ${code}):\n${out}${err}`)
  const ticks = { control: treeTicks(pids.control) - before.control, agent: treeTicks(pids.agent) - before.agent }
  const wrkTicks = microsToTicks(Number(proc.resourceUsage()?.cpuTime.total ?? 0))
  const report = parseWrk(out)
  const load = contention(before.cpu, readCpuTimes(), ticks.control + ticks.agent + wrkTicks)
  return {
    rps: report.requestsPerSec,
    p50Ms: report.p50Ms,
    p99Ms: report.p99Ms,
    requests: report.requests,
    non2xx: report.non2xx,
    socketErrors: report.socketErrors,
    controlCpuUs: ticksToMicros(ticks.control) / Math.max(1, report.requests),
    agentCpuUs: ticksToMicros(ticks.agent) / Math.max(1, report.requests),
    otherPercent: load.otherPercent,
    stealPercent: load.stealPercent,
  }
}

const fmtRun = (r: Run) =>
  `${Math.round(r.rps)} req/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, control ${r.controlCpuUs.toFixed(0)} µs/req, agent ${r.agentCpuUs.toFixed(0)} µs/req, other ${r.otherPercent.toFixed(0)}%, steal ${r.stealPercent.toFixed(0)}%${r.non2xx + r.socketErrors ? `, ${r.non2xx} non-2xx, ${r.socketErrors} socket errors` : ''}`

async function edgeRounds(control: ControlPlane, b: JoinedNode, local: Site, remote: Site): Promise<{ local: Run; remote: Run }[]> {
  for (const site of [local, remote]) await runWrk(control, b, site, WRK.warmupSeconds)
  const rounds: { local: Run; remote: Run }[] = []
  for (let round = 1; round <= WRK.rounds; round++) {
    // Swapped each round, so neither side always runs right after the other's load.
    const order = round % 2 === 1 ? [local, remote] : [remote, local]
    const runs: Partial<Record<'local' | 'remote', Run>> = {}
    for (const site of order) runs[site === local ? 'local' : 'remote'] = await runWrk(control, b, site, WRK.durationSeconds)
    rounds.push(runs as { local: Run; remote: Run })
    console.log(`[edge] round ${round}: control ${fmtRun(runs.local!)}\n                 B ${fmtRun(runs.remote!)}`)
  }
  return rounds
}

// ---- 3. files API ---------------------------------------------------------------------------

async function filesRoundsOf(control: ControlPlane, local: Site, remote: Site): Promise<Record<'local' | 'remote', number[]>> {
  const times: Record<'local' | 'remote', number[]> = { local: [], remote: [] }
  const content = text4k()
  for (let i = 0; i < FILES.warmup + FILES.rounds; i++) {
    const order = i % 2 === 0 ? [local, remote] : [remote, local]
    for (const site of order) {
      const started = performance.now()
      await siteApi(control, site, 'POST', 'files/write/', { path: 'bench/four-k.txt', content })
      const read = await siteApi(control, site, 'GET', 'files/read/?path=bench/four-k.txt')
      const elapsed = performance.now() - started
      if (read.data.content !== content) throw new Error(`files/read on ${site.slug} did not give back what was written`)
      if (i >= FILES.warmup) times[site === local ? 'local' : 'remote'].push(elapsed)
    }
  }
  return times
}

// ---- main -----------------------------------------------------------------------------------

async function main() {
  if (!Bun.which('wrk')) {
    console.error('wrk is not installed; apt-get install wrk')
    process.exit(1)
  }
  cleanupOnExit()
  // --binary: another build (an experiment) in place of the copy of dist/berth.
  const binary = argv.includes('--binary') ? argv[argv.indexOf('--binary') + 1]! : snapshotBinary()
  const loadBefore = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  let lab: Lab | undefined
  let control: ControlPlane | undefined
  try {
    const labStarted = performance.now()
    // BERTH_LAB_NAME: another lab name, beside a run of another worktree (names are exclusive on a machine).
    lab = await startLab(process.env.BERTH_LAB_NAME ?? 'bench-cluster')
    control = await startControlPlane(lab, { binary })
    console.log(`lab and control plane up in ${ms(performance.now() - labStarted)}`)

    const firstBought = await buy(control, 'local')
    const firstStatus = await waitForSite(control.url, firstBought.key, firstBought.slug, 180_000)
    if (firstStatus !== 'active') throw new Error(`site ${firstBought.slug} ended ${firstStatus}`)
    const local: Site = { ...firstBought, where: 'control' }

    const { b, site: remote, figures: join } = await joinAndServe(lab, control)
    const localNode = await nodeOf(control, local.slug)
    if (localNode !== 'control') throw new Error(`the first site runs on ${localNode}, not on the control plane`)
    console.log(`[join] token to agent up ${ms(join.joinMs)}; purchase ${ms(join.buyMs)}; purchase to active ${ms(join.activeMs)}; purchase to first 200 via the edge ${ms(join.servedMs)}; total ${ms(join.totalMs)}`)

    const page = benchPage()
    for (const site of [local, remote]) {
      await siteApi(control, site, 'POST', 'files/write/', { path: 'public/index.html', content: page })
      const served = await viaEdge(control, site.slug)
      if (served.status !== 200 || served.text !== page) throw new Error(`the edge did not serve the bench page of ${site.slug}: ${served.status} (${served.text.length} bytes)`)
    }

    const rounds = await edgeRounds(control, b, local, remote)
    const files = await filesRoundsOf(control, local, remote)
    report({ loadBefore, join, rounds, files, lab, b })
  } finally {
    await control?.berth.stop().catch(() => {})
    await lab?.stop()
  }
}

function report(r: { loadBefore: string; join: JoinFigures; rounds: { local: Run; remote: Run }[]; files: Record<'local' | 'remote', number[]>; lab: Lab; b: JoinedNode }) {
  const loadAfter = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  const pick = (side: 'local' | 'remote') => {
    const runs = r.rounds.map((round) => round[side])
    const m = (f: (run: Run) => number) => median(runs.map(f))
    return { rps: m((x) => x.rps), p50Ms: m((x) => x.p50Ms), p99Ms: m((x) => x.p99Ms), controlCpuUs: m((x) => x.controlCpuUs), agentCpuUs: m((x) => x.agentCpuUs), otherPercent: m((x) => x.otherPercent), requests: runs.reduce((n, x) => n + x.requests, 0), non2xx: runs.reduce((n, x) => n + x.non2xx, 0), socketErrors: runs.reduce((n, x) => n + x.socketErrors, 0) }
  }
  const local = pick('local')
  const remote = pick('remote')
  const rpsRatio = median(r.rounds.map((x) => x.remote.rps / x.local.rps))
  const p50Ratio = median(r.rounds.map((x) => x.local.p50Ms / x.remote.p50Ms))
  const pass = rpsRatio >= TARGET_RATIO && p50Ratio >= TARGET_RATIO
  const files = { local: { p50: percentile(r.files.local, 50), p95: percentile(r.files.local, 95) }, remote: { p50: percentile(r.files.remote, 50), p95: percentile(r.files.remote, 95) } }

  console.log(`\nCluster (issue 28): site on node B (agent forward) vs site on the control plane, ${SKU} (${IMAGE}), 2 KB page; wrk -t${WRK.threads} -c${WRK.connections}, ${WRK.warmupSeconds} s warm-up, median of ${WRK.rounds} x ${WRK.durationSeconds} s interleaved; files ${FILES.rounds} rounds each; load average ${r.loadBefore} before, ${loadAfter} after; bun ${Bun.version}; ${new Date().toISOString()}`)
  console.log(`\nJoin to first site served on B: ${ms(r.join.totalMs)} (token to agent up ${ms(r.join.joinMs)}, purchase ${ms(r.join.buyMs)}, purchase to active ${ms(r.join.activeMs)}, purchase to first 200 through the edge ${ms(r.join.servedMs)})`)
  console.log('\n| measure | control node | node B | B / control |')
  console.log('| --- | ---: | ---: | ---: |')
  console.log(`| edge req/s | ${Math.round(local.rps)} | ${Math.round(remote.rps)} | ${rpsRatio.toFixed(2)} |`)
  console.log(`| edge p50 | ${local.p50Ms.toFixed(2)} ms | ${remote.p50Ms.toFixed(2)} ms | ${(1 / p50Ratio).toFixed(2)} |`)
  console.log(`| edge p99 | ${local.p99Ms.toFixed(2)} ms | ${remote.p99Ms.toFixed(2)} ms | ${(remote.p99Ms / local.p99Ms).toFixed(2)} |`)
  console.log(`| control plane CPU / req | ${local.controlCpuUs.toFixed(0)} µs | ${remote.controlCpuUs.toFixed(0)} µs | ${(remote.controlCpuUs / local.controlCpuUs).toFixed(2)} |`)
  console.log(`| agent CPU / req | ${local.agentCpuUs.toFixed(0)} µs | ${remote.agentCpuUs.toFixed(0)} µs | |`)
  console.log(`| other load during edge runs | ${local.otherPercent.toFixed(0)}% | ${remote.otherPercent.toFixed(0)}% | |`)
  console.log(`| files write+read p50 | ${ms(files.local.p50)} | ${ms(files.remote.p50)} | ${(files.remote.p50 / files.local.p50).toFixed(2)} |`)
  console.log(`| files write+read p95 | ${ms(files.local.p95)} | ${ms(files.remote.p95)} | ${(files.remote.p95 / files.local.p95).toFixed(2)} |`)
  for (const [name, side] of [["the control node's site", local], ["B's site", remote]] as const) {
    if (side.non2xx + side.socketErrors > 0) console.log(`note: ${name}: ${side.non2xx} non-2xx answers and ${side.socketErrors} socket errors (wrk's connect, read, write, timeout) over ${side.requests} requests`)
  }
  console.log(`\n${pass ? 'PASS' : 'FAIL'}: edge on B ${rpsRatio.toFixed(2)} of the control node's req/s, p50 ratio (control/B) ${p50Ratio.toFixed(2)} (goal: both at least ${TARGET_RATIO})`)
  if (!pass) process.exitCode = 1
}

await main()
