/**
 * `bun bench/edge.ts`: the edge proxy (src/edge) against nginx, both proxying to a real site
 * container, measured with the same wrk settings, interleaved, median of 3 rounds.
 *
 *   bun bench/edge.ts            both scenarios (about 3 minutes); the figures in docs/benchmarks.md
 *   bun bench/edge.ts --quick    1 round of 2 s runs, to check the harness itself
 *   bun bench/edge.ts --only=static|php
 *   bun bench/edge.ts --workers=2   the edge in 2 processes sharing the port (SO_REUSEPORT), to
 *                                   see what a multi-threaded listener would give; Berth runs 1
 *   bun bench/edge.ts --no-access-log   the static scenario without either proxy's access log,
 *                                       to see what writing it costs
 *
 * Scenarios (each skipped, with a note, when its image is missing):
 * - static: berth/static:1 (busybox httpd; one connection per request, it has no keep-alive).
 *   Without that image, an equivalent FROM-scratch busybox image is built for the run. As Berth
 *   runs a shared-plan site: the site's home is a Docker volume, and the edge writes the site's
 *   access log into it (domain/logs/access-log.ts, through SiteHome, as the site user), since
 *   busybox httpd cannot; nginx writes its own access log (combined, unbuffered, as by default).
 *   After the rounds, each log's lines are counted against the requests wrk saw answered.
 * - php: berth/php:1 (nginx + PHP-FPM) serving the same static page over kept-alive
 *   connections, so the proxies' own cost shows rather than the container's. The container's
 *   nginx writes the access log of such sites, so neither proxy writes one.
 *
 * Each scenario: one container on a network of its own serving a 2 KB index.html; nginx
 * (worker_processes = cores, `upstream { keepalive 64; }`, HTTP/1.1, the same forwarding headers
 * as the edge); the edge in its own Bun process, as Berth runs it (Bun.serve, requestIP, Host
 * parsing, EdgeMetrics). Before each run the harness waits for TIME_WAIT sockets towards the
 * container to expire (see `settle`). Printed: requests/s, p50, p99, the proxy processes' CPU
 * time per request, the hypervisor's steal during the run, and the edge/nginx ratio (median of
 * the per-round ratios). Everything started is removed at the end, on failure and on Ctrl-C.
 */
import { spawn, spawnSync, type Subprocess } from 'bun'
import type Docker from 'dockerode'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { EdgeAccessLog } from '../src/domain/logs/access-log'
import { openSiteHome } from '../src/drivers/files/home'
import { EDGE_ACCESS_LOG } from '../src/domain/logs/sources'
import { makeTar } from '../src/drivers/runtime/tar'
import { EdgeMetrics } from '../src/edge/metrics'
import { createEdgeProxy, parseSiteHost } from '../src/edge/proxy'
import { createLogger } from '../src/lib/logger'
import { nginxCommand, nginxProxyConf } from './nginx'

const WRK = { connections: 64, threads: 2, warmupSeconds: 3, durationSeconds: 10, rounds: 3 }
const EDGE = { workers: 1, accessLog: true }
const HOST = 'bench.localhost'
const SITE_PORT = 8080
const SOCKET = '/var/run/docker.sock'
const OWN_STATIC_IMAGE = 'berth-bench/edge-static:1'
const TARGET_RATIO = 0.9

// ---- the edge, in its own process --------------------------------------------------------

/**
 * `bun bench/edge.ts --edge-server <port> <address> <upstream port> <workers> [<home>]`: Berth's
 * edge, alone; with several workers each process binds the port with SO_REUSEPORT. With `home`
 * (the host folder of the site's volume) it writes the site's access log there, as Berth does
 * for shared-plan sites (the site marked `accessLog`, the EdgeAccessLog of src/compose/sites.ts).
 */
function serveEdge(port: number, address: string, upstreamPort: number, workers: number, home: string | null) {
  const metrics = new EdgeMetrics()
  const log = createLogger('warn')
  const site = { siteId: 'site_bench', slug: 'bench', state: 'serving' as const, upstream: { address, port: upstreamPort }, ...(home ? { accessLog: true as const } : {}) }
  // The runtime's homePath, as DockerRuntime answers it once the volume's path is known.
  const accessLog = home ? new EdgeAccessLog({ homePath: () => Promise.resolve(home) }, log, openSiteHome) : undefined
  const edge = createEdgeProxy({
    resolve: (host) => (parseSiteHost(host, 'localhost') === 'bench' ? site : null),
    metrics,
    log,
    siteUrl: 'http://localhost:8080',
    accessLog,
  })
  // As src/server.ts does it: the peer address from the listener, the Host checked per request.
  Bun.serve({
    hostname: '127.0.0.1',
    port,
    reusePort: workers > 1,
    fetch(request, server) {
      const host = request.headers.get('host') ?? ''
      if (parseSiteHost(host, 'localhost') === null) return new Response('not a site', { status: 404 })
      return edge.handle(request, server.requestIP(request)?.address ?? '127.0.0.1')
    },
  })
  // Berth drains the metrics into SQLite periodically; here they are dropped.
  setInterval(() => metrics.drain(), 5000)
  process.once('SIGTERM', () => void (accessLog?.close() ?? Promise.resolve()).finally(() => process.exit(0)))
}

// ---- resources, and removing them whatever happens ---------------------------------------

const children = new Set<Subprocess>()
const folders = new Set<string>()
const containers = new Set<string>()
const networks = new Set<string>()
const volumes = new Set<string>()

function track<T extends Subprocess>(child: T): T {
  children.add(child)
  void child.exited.then(() => children.delete(child))
  return child
}

async function cleanup(docker: Docker | null) {
  for (const child of children) if (child.exitCode === null) child.kill('SIGTERM')
  await Promise.all([...children].map((c) => Promise.race([c.exited, Bun.sleep(3000)])))
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  for (const id of containers) {
    await docker?.getContainer(id).remove({ force: true }).catch(() => {})
    containers.delete(id)
  }
  for (const id of networks) {
    await docker?.getNetwork(id).remove().catch(() => {})
    networks.delete(id)
  }
  for (const name of volumes) {
    await docker?.getVolume(name).remove().catch(() => {})
    volumes.delete(name)
  }
  for (const dir of folders) rmSync(dir, { recursive: true, force: true })
  folders.clear()
}

/** Last resort when the process exits without `cleanup` having run (an uncaught error). */
function cleanupSync() {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  for (const id of containers) spawnSync(['docker', 'rm', '-f', id], { stdout: 'ignore', stderr: 'ignore' })
  for (const id of networks) spawnSync(['docker', 'network', 'rm', id], { stdout: 'ignore', stderr: 'ignore' })
  for (const name of volumes) spawnSync(['docker', 'volume', 'rm', name], { stdout: 'ignore', stderr: 'ignore' })
  for (const dir of folders) rmSync(dir, { recursive: true, force: true })
}

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  folders.add(dir)
  return dir
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer()
    srv.once('error', fail)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => done(port))
    })
  })
}

async function waitForOk(url: string, what: string, proc?: Subprocess, headers: Record<string, string> = {}) {
  const deadline = Date.now() + 15_000
  for (;;) {
    if (proc && proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}`)
    const status = await fetch(url, { headers }).then((r) => r.status, () => 0)
    if (status === 200) return
    if (Date.now() > deadline) throw new Error(`${what} did not answer 200 at ${url} (last status ${status})`)
    await Bun.sleep(50)
  }
}

// ---- the site container -----------------------------------------------------------------

/** A 2 KB page, like a small real index.html. */
function benchPage(): string {
  const para = '<p>Berth edge benchmark page. The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.</p>\n'
  let html = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>bench</title></head><body>\n'
  while (html.length < 2048 - 40) html += para
  return `${html.slice(0, 2048 - 16)}\n</body></html>\n`.padEnd(2048, ' ')
}

async function imageExists(docker: Docker, tag: string) {
  return docker.getImage(tag).inspect().then(() => true, () => false)
}

async function followStream(docker: Docker, stream: NodeJS.ReadableStream) {
  await new Promise<void>((done, fail) =>
    docker.modem.followProgress(stream, (err: Error | null, events: { error?: string }[]) => {
      const failed = events?.find((e) => e.error)
      if (err || failed) fail(err ?? new Error(failed!.error))
      else done()
    }),
  )
}

/** Stands in for berth/static:1 when it has not been built: busybox httpd, FROM scratch. */
async function buildOwnStaticImage(docker: Docker) {
  const dockerfile = `FROM scratch\nCOPY busybox /bin/busybox\nCOPY index.html /home/site/public/index.html\nWORKDIR /home/site\nEXPOSE ${SITE_PORT}\nCMD ["/bin/busybox", "httpd", "-f", "-p", "${SITE_PORT}", "-h", "/home/site/public"]\n`
  const context = makeTar([
    { type: 'file', path: 'Dockerfile', data: dockerfile },
    { type: 'file', path: 'busybox', data: readFileSync('/bin/busybox'), mode: 0o755 },
    { type: 'file', path: 'index.html', data: benchPage() },
  ])
  await followStream(docker, await docker.buildImage(Buffer.from(context) as never, { t: OWN_STATIC_IMAGE, rm: true, forcerm: true }))
}

interface Site {
  image: string
  address: string
  port: number
  /** Host folder of the site's home volume, when it has one. */
  home: string | null
}

/**
 * One container on a network of its own, its web root holding the bench page. With `volume`, its
 * home (/home/site) is a Docker volume, as Berth mounts it (runtime/site-container.ts).
 */
async function startSite(docker: Docker, image: string, name: string, volume: boolean): Promise<Site> {
  const network = await docker.createNetwork({ Name: name, Driver: 'bridge', Labels: { 'dev.berth.bench': 'edge' } })
  networks.add(network.id)
  let home: string | null = null
  if (volume) {
    await docker.createVolume({ Name: `${name}-home`, Labels: { 'dev.berth.bench': 'edge' } })
    volumes.add(`${name}-home`)
    home = (await docker.getVolume(`${name}-home`).inspect()).Mountpoint
  }
  const container = await docker.createContainer({
    name,
    Image: image,
    Labels: { 'dev.berth.bench': 'edge' },
    HostConfig: {
      NetworkMode: name,
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      ...(volume ? { Mounts: [{ Type: 'volume' as const, Source: `${name}-home`, Target: '/home/site' }] } : {}),
    },
  })
  containers.add(container.id)
  const page = makeTar([
    { type: 'dir', path: 'public', mode: 0o755, uid: 1000, gid: 1000 },
    { type: 'file', path: 'public/index.html', data: benchPage(), mode: 0o644, uid: 1000, gid: 1000 },
  ])
  await container.putArchive(Buffer.from(page) as never, { path: '/home/site' })
  await container.start()
  const info = await container.inspect()
  const address = info.NetworkSettings.Networks[name]?.IPAddress
  if (!address) throw new Error(`container ${name} has no address on its network`)
  await waitForOk(`http://${address}:${SITE_PORT}/`, `${image} container`)
  return { image, address, port: SITE_PORT, home }
}

// ---- the two proxies ----------------------------------------------------------------------

interface Proxy {
  name: 'nginx' | 'edge'
  url: string
  /** The access log it writes, or null. */
  accessLog: string | null
  /** Processes whose CPU time counts as the proxy's. */
  pids(): number[]
}

/** nginx, writing its access log (on the same disk as the site volumes) when the edge writes the site's. */
async function startNginx(site: Site, accessLog: boolean): Promise<Proxy> {
  const dir = tempDir('berth-bench-nginx-')
  const port = await freePort()
  const logPath = accessLog ? join(dir, 'access.log') : null
  const conf = nginxProxyConf({ root: dir, workers: availableParallelism(), port, upstream: `${site.address}:${site.port}`, ...(logPath ? { accessLog: logPath } : {}) })
  writeFileSync(join(dir, 'nginx.conf'), conf)
  const proc = track(spawn(nginxCommand(dir), { stdout: 'ignore', stderr: 'inherit' }))
  const url = `http://127.0.0.1:${port}/`
  await waitForOk(url, 'nginx', proc, { host: HOST })
  return { name: 'nginx', url, accessLog: logPath, pids: () => childPids(proc.pid) }
}

/** The edge, writing the site's access log into its home volume when `accessLog`. */
async function startEdge(site: Site, accessLog: boolean): Promise<Proxy> {
  const port = await freePort()
  const home = accessLog ? site.home : null
  const args = [process.execPath, import.meta.path, '--edge-server', String(port), site.address, String(site.port), String(EDGE.workers), ...(home ? [home] : [])]
  const procs = Array.from({ length: EDGE.workers }, () => track(spawn(args, { stdout: 'inherit', stderr: 'inherit' })))
  const url = `http://127.0.0.1:${port}/`
  await waitForOk(url, 'edge', procs[0], { host: HOST })
  return { name: 'edge', url, accessLog: home ? join(home, EDGE_ACCESS_LOG) : null, pids: () => procs.map((p) => p.pid) }
}

/** Lines in a file (0 when it does not exist). */
function countLines(path: string): number {
  let data: Buffer
  try {
    data = readFileSync(path)
  } catch {
    return 0
  }
  let lines = 0
  for (let at = data.indexOf(10); at !== -1; at = data.indexOf(10, at + 1)) lines++
  return lines
}

/** All CPUs' time from /proc/stat, in ticks: the total and the part stolen by the hypervisor. */
function machineTicks(): { total: number; steal: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal guest guest_nice; guest time is inside user.
  return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 }
}

/** Sockets in TIME_WAIT towards the site's address and port, from /proc/net/tcp. */
function timeWaitTowards(site: Site): number {
  const ip = site.address.split('.').map((b) => Number(b).toString(16).padStart(2, '0').toUpperCase()).reverse().join('')
  const remote = `${ip}:${site.port.toString(16).toUpperCase().padStart(4, '0')}`
  return readFileSync('/proc/net/tcp', 'utf8').split('\n').filter((line) => {
    const cols = line.trim().split(/\s+/)
    return cols[2] === remote && cols[3] === '06'
  }).length
}

/**
 * Waits (at most 65 s, Linux's TIME_WAIT) until few sockets towards the container are in
 * TIME_WAIT. nginx closes each upstream connection busybox will not keep alive with a FIN and
 * keeps it in TIME_WAIT for 60 s; tens of thousands of them make every later connect() to that
 * address slower, which would charge one proxy's leftovers to the run after it.
 */
async function settle(site: Site): Promise<number> {
  const started = Date.now()
  while (timeWaitTowards(site) > 500 && Date.now() - started < 65_000) await Bun.sleep(1000)
  return (Date.now() - started) / 1000
}

function childPids(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** User + system CPU seconds of the processes (all their threads). */
function cpuSeconds(pids: number[]): number {
  const tick = 100 // USER_HZ on Linux
  let total = 0
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      total += (Number(fields[11]) + Number(fields[12])) / tick
    } catch {
      // a worker that exited: its time is lost, which only lowers the figure
    }
  }
  return total
}

// ---- wrk ---------------------------------------------------------------------------------

interface Run {
  rps: number
  p50Ms: number
  p99Ms: number
  requests: number
  non2xx: number
  socketErrors: number
  cpuUsPerRequest: number
  /** Share of the machine's CPU time the hypervisor gave to other guests during the run. */
  stealPercent: number
}

async function runWrk(proxy: Proxy, seconds: number): Promise<Run> {
  const pids = proxy.pids()
  const cpuBefore = cpuSeconds(pids)
  const machineBefore = machineTicks()
  const args = ['wrk', `-t${WRK.threads}`, `-c${WRK.connections}`, `-d${seconds}s`, '--latency', '-H', `Host: ${HOST}`, proxy.url]
  const proc = track(spawn(args, { stdout: 'pipe', stderr: 'pipe' }))
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`wrk failed on ${proxy.name} (exit ${code}):\n${out}${err}`)
  const run = parseWrk(out)
  run.cpuUsPerRequest = ((cpuSeconds(pids) - cpuBefore) * 1e6) / Math.max(1, run.requests)
  const machine = machineTicks()
  run.stealPercent = (100 * (machine.steal - machineBefore.steal)) / Math.max(1, machine.total - machineBefore.total)
  return run
}

function parseWrk(out: string): Run {
  const number = (re: RegExp) => {
    const m = re.exec(out)
    if (!m) throw new Error(`unexpected wrk output:\n${out}`)
    return m
  }
  const ms = (m: RegExpExecArray) => Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000, m: 60_000 } as Record<string, number>)[m[2]!]!
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  return {
    rps: Number(number(/^Requests\/sec:\s+([\d.]+)/m)[1]),
    p50Ms: ms(number(/^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$/m)),
    p99Ms: ms(number(/^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m)),
    requests: Number(number(/^\s+(\d+) requests in /m)[1]),
    non2xx: non2xx ? Number(non2xx[1]) : 0,
    socketErrors: socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0,
    cpuUsPerRequest: 0,
    stealPercent: 0,
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

// ---- a scenario --------------------------------------------------------------------------

/** A proxy's access log after the rounds: its lines, and the requests wrk saw answered (warm-up included). */
interface LogCount {
  lines: number
  requests: number
}

interface ScenarioResult {
  scenario: string
  image: string
  nginx: Run
  edge: Run
  rounds: { nginx: Run; edge: Run }[]
  /** With the access logs on: each proxy's lines against its requests. */
  logs: { nginx: LogCount; edge: LogCount } | null
}

async function runScenario(docker: Docker, scenario: string, image: string, accessLog: boolean): Promise<ScenarioResult> {
  const name = `berth-bench-edge-${scenario}-${process.pid}`
  console.log(`\n[${scenario}] ${image}: starting the container, nginx and the edge${accessLog ? ', both writing an access log' : ''}`)
  // Berth mounts every site's home as a volume; the kept-alive scenario's container needs none.
  const site = await startSite(docker, image, name, scenario === 'static')
  const proxies = [await startNginx(site, accessLog), await startEdge(site, accessLog)]
  const answered = { nginx: 0, edge: 0 }
  const measure = async (proxy: Proxy, seconds: number) => {
    const waited = await settle(site)
    if (waited >= 2) console.log(`[${scenario}] waited ${waited.toFixed(0)} s for TIME_WAIT sockets towards the container to expire`)
    const run = await runWrk(proxy, seconds)
    answered[proxy.name] += run.requests
    return run
  }
  for (const proxy of proxies) await measure(proxy, WRK.warmupSeconds)
  const rounds: ScenarioResult['rounds'] = []
  for (let round = 1; round <= WRK.rounds; round++) {
    const nginx = await measure(proxies[0]!, WRK.durationSeconds)
    const edge = await measure(proxies[1]!, WRK.durationSeconds)
    rounds.push({ nginx, edge })
    console.log(`[${scenario}] round ${round}: nginx ${format(nginx)} | edge ${format(edge)}`)
  }
  let logs: ScenarioResult['logs'] = null
  if (accessLog) {
    await Bun.sleep(1000) // the edge appends its lines every 250 ms
    const count = (proxy: Proxy): LogCount => ({ lines: countLines(proxy.accessLog!), requests: answered[proxy.name] })
    logs = { nginx: count(proxies[0]!), edge: count(proxies[1]!) }
  }
  const pick = (which: 'nginx' | 'edge'): Run => {
    const runs = rounds.map((r) => r[which])
    return {
      rps: median(runs.map((r) => r.rps)),
      p50Ms: median(runs.map((r) => r.p50Ms)),
      p99Ms: median(runs.map((r) => r.p99Ms)),
      requests: runs.reduce((n, r) => n + r.requests, 0),
      non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
      socketErrors: runs.reduce((n, r) => n + r.socketErrors, 0),
      cpuUsPerRequest: median(runs.map((r) => r.cpuUsPerRequest)),
      stealPercent: median(runs.map((r) => r.stealPercent)),
    }
  }
  return { scenario, image, nginx: pick('nginx'), edge: pick('edge'), rounds, logs }
}

function format(run: Run): string {
  return `${Math.round(run.rps)} req/s, p50 ${run.p50Ms.toFixed(2)} ms, p99 ${run.p99Ms.toFixed(2)} ms, ${run.cpuUsPerRequest.toFixed(1)} µs CPU/req, ${run.stealPercent.toFixed(0)}% steal${run.non2xx + run.socketErrors ? `, ${run.non2xx} non-2xx, ${run.socketErrors} socket errors` : ''}`
}

function report(results: ScenarioResult[]) {
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
  console.log(`\nEdge proxy (${EDGE.workers} process${EDGE.workers > 1 ? 'es' : ''}) vs nginx (${availableParallelism()} workers): wrk -t${WRK.threads} -c${WRK.connections}, ${WRK.warmupSeconds} s warm-up, median of ${WRK.rounds} x ${WRK.durationSeconds} s, ${availableParallelism()} cores, access logs ${EDGE.accessLog ? 'on' : 'off'} in the static scenario, load average ${load}, bun ${Bun.version}, ${new Date().toISOString()}`)
  console.log('| scenario | proxy | req/s | p50 ms | p99 ms | proxy CPU µs/req | steal | edge/nginx |')
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
  for (const r of results) {
    // Each round's pair ran back to back, so the median of the per-round ratios is the figure
    // least moved by other load on a shared machine.
    const ratio = median(r.rounds.map((round) => round.edge.rps / round.nginx.rps))
    for (const [name, run] of [['nginx', r.nginx], ['edge', r.edge]] as const) {
      const verdict = name === 'edge' ? `${ratio.toFixed(2)} (${ratio >= TARGET_RATIO ? 'meets' : 'below'} ${TARGET_RATIO})` : ''
      console.log(`| ${r.scenario} (${r.image}) | ${name} | ${Math.round(run.rps)} | ${run.p50Ms.toFixed(2)} | ${run.p99Ms.toFixed(2)} | ${run.cpuUsPerRequest.toFixed(1)} | ${run.stealPercent.toFixed(0)}% | ${verdict} |`)
    }
    for (const [name, run] of [['nginx', r.nginx], ['edge', r.edge]] as const) {
      if (run.non2xx + run.socketErrors > 0) console.log(`  note: ${r.scenario}/${name}: ${run.non2xx} non-2xx responses, ${run.socketErrors} socket errors over ${run.requests} requests`)
    }
    // wrk counts the answers it read before its clock ran out; a proxy also logs the few it
    // answered after, and the start-up probe.
    if (r.logs) console.log(`  access logs (${r.scenario}): ${(['nginx', 'edge'] as const).map((name) => `${name} ${r.logs![name].lines} lines for ${r.logs![name].requests} requests wrk counted`).join('; ')}`)
    else if (r.scenario === 'static') console.log(`  access logs (${r.scenario}): off (--no-access-log)`)
  }
}

// ---- main --------------------------------------------------------------------------------

async function main(argv: string[]) {
  const known = /^--(quick|only=(static|php)|workers=[1-8]|no-access-log)$/
  const unknown = argv.filter((a) => !known.test(a))
  if (unknown.length > 0) {
    console.error(`unknown option ${unknown.join(' ')}; usage: bun bench/edge.ts [--quick] [--only=static|php] [--workers=N] [--no-access-log]`)
    process.exit(2)
  }
  if (argv.includes('--quick')) Object.assign(WRK, { warmupSeconds: 1, durationSeconds: 2, rounds: 1 })
  const only = argv.find((a) => a.startsWith('--only='))?.slice(7)
  EDGE.workers = Number(argv.find((a) => a.startsWith('--workers='))?.slice(10) ?? 1)
  EDGE.accessLog = !argv.includes('--no-access-log')
  for (const tool of ['wrk', 'nginx']) {
    if (!Bun.which(tool) && !(tool === 'nginx' && Bun.file('/usr/sbin/nginx').size > 0)) {
      console.error(`${tool} is not installed; apt-get install ${tool}`)
      process.exit(1)
    }
  }
  const { default: DockerClient } = await import('dockerode')
  const docker: Docker = new DockerClient({ socketPath: SOCKET })
  process.once('exit', cleanupSync)
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => void cleanup(docker).finally(() => process.exit(code)))
  }
  const results: ScenarioResult[] = []
  try {
    await docker.ping()
    if (only !== 'php') {
      let image = 'berth/static:1'
      if (!(await imageExists(docker, image))) {
        console.log(`${image} is not built (berth images build); building ${OWN_STATIC_IMAGE} in its place`)
        await buildOwnStaticImage(docker)
        image = OWN_STATIC_IMAGE
      }
      results.push(await runScenario(docker, 'static', image, EDGE.accessLog))
      await cleanup(docker)
    }
    if (only !== 'static') {
      if (await imageExists(docker, 'berth/php:1')) results.push(await runScenario(docker, 'php', 'berth/php:1', false))
      else console.log('\nberth/php:1 is not built (berth images build); the kept-alive scenario is skipped')
    }
  } finally {
    await cleanup(docker)
  }
  report(results)
}

if (process.argv[2] === '--edge-server') {
  serveEdge(Number(process.argv[3]), process.argv[4]!, Number(process.argv[5]), Number(process.argv[6] ?? 1), process.argv[7] ?? null)
} else {
  await main(process.argv.slice(2))
}
