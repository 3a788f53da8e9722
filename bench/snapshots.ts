/**
 * `bun bench/snapshots.ts [--rounds 5] [--json]` (or `bun run bench:snapshots`): snapshots and
 * restores of a vps site holding 100 MiB in 1,000 files of random bytes (the worst case for
 * compression), against the compiled binary and the real Docker engine.
 *
 * Per round, interleaved so that a neighbour's load on the shared machine hits all alike:
 * - the site's own latency: GETs of a small page through Berth's edge, 4 in flight, for
 *   BASELINE_MS before the snapshot ("before") and from POST /snapshot/ until the snapshot is
 *   ready ("during"); the figures are p50 and p99 of each and their ratio;
 * - the snapshot: POST /snapshot/ until GET shows it ready; Berth's log adds how long the site
 *   was frozen (`frozen_ms`);
 * - the restore: POST .../restore/ until the archive is ready again, which is when the restarted
 *   site answers; the log adds how long the site was frozen or down (`down_ms`);
 * - the reference: the same work without Berth, on the same volume: `tar -c | zstd -3` of the
 *   home to a file, and `zstd -d | tar -x` of it into an empty folder.
 * Each figure is the median over the rounds.
 */
import { spawn, spawnSync } from 'bun'
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import { contention, readCpuTimes } from './cpu-contention'
import { docker, removeSitesOf } from '../test/helpers/sites'
import { cleanup, cleanupOnExit, freePort, snapshotBinary, tempDir, track, waitFor } from './processes'
import { median } from './stats'

const arg = (name: string) => process.argv[process.argv.indexOf(name) + 1]
const ROUNDS = Number(process.argv.includes('--rounds') ? arg('--rounds') : 5)
const JSON_OUT = process.argv.includes('--json')
const FILES = 1000
const FILE_BYTES = 100 * 1024
const BASELINE_MS = 3000
const CLIENTS = 4

const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.max(0, Math.ceil((p / 100) * values.length) - 1))]!

interface Berth {
  url: string
  port: number
  logFile: string
  stop(): Promise<void>
}

async function main() {
  cleanupOnExit()
  const binary = snapshotBinary()
  const dataDir = tempDir('berth-bench-snapshots-')
  const berth = await start(binary, dataDir)
  const loadBefore = loadavg()
  const cpuBefore = readCpuTimes()
  let instance: string | undefined
  try {
    const slug = `snapbench-${Math.random().toString(36).slice(2, 7)}`
    const key = await buy(berth, slug)
    const container = (await docker.listContainers({ filters: { label: ['dev.berth.managed=true', `dev.berth.site-slug=${slug}`] } }))[0]!
    instance = container.Labels['dev.berth.instance']
    const home = (await docker.getVolume(`berth-${instance}-${slug}-home`).inspect()).Mountpoint
    console.log(`site ${slug}: writing ${FILES} files of ${FILE_BYTES / 1024} KiB...`)
    await shell(container.Id, `set -e; echo ok > public/ping.html; for d in $(seq 0 19); do mkdir -p data/d$d; done; for i in $(seq 1 ${FILES}); do head -c ${FILE_BYTES} /dev/urandom > data/d$((i % 20))/f$i; done`)
    // The first daily backup comes at the first maintenance pass (30 s after start): let it
    // pass, so that it does not freeze the site during a measurement.
    console.log('waiting for the first daily backup to be done...')
    await waitFor(async () => (await get(berth, `/sites/${slug}/backups/`, key)).some((b: { status: string }) => b.status === 'ready'), 120_000, 250)

    const rounds: Round[] = []
    for (let r = 0; r < ROUNDS; r++) {
      rounds.push(await round(berth, slug, key, home, dataDir))
      const x = rounds.at(-1)!
      console.log(`round ${r + 1}/${ROUNDS}: snapshot ${ms(x.snapshotMs)} (frozen ${ms(x.frozenMs)}), restore ${ms(x.restoreMs)} (down ${ms(x.downMs)}), reference tar+zstd ${ms(x.refSnapshotMs)} / unzstd+tar ${ms(x.refRestoreMs)}; latency p50 ${x.before.p50.toFixed(2)} → ${x.during.p50.toFixed(2)} ms, p99 ${x.before.p99.toFixed(2)} → ${x.during.p99.toFixed(2)} ms, max ${ms(x.before.max)} → ${ms(x.during.max)}`)
    }
    const cpuAfter = readCpuTimes()
    report(rounds, { loadBefore, loadAfter: loadavg(), contention: contention(cpuBefore, cpuAfter, 0) })
  } finally {
    await berth.stop()
    if (instance) await removeSitesOf(instance)
    cleanup()
  }
}

interface Latency {
  p50: number
  p99: number
  max: number
  count: number
  errors: number
}

interface Round {
  snapshotMs: number
  frozenMs: number
  compressMs: number
  storeMs: number
  storedBytes: number
  fileCount: number
  restoreMs: number
  downMs: number
  fetchMs: number
  restartMs: number
  refSnapshotMs: number
  refRestoreMs: number
  before: Latency
  during: Latency
}

async function round(berth: Berth, slug: string, key: string, home: string, dataDir: string): Promise<Round> {
  // The site's own latency before and during the snapshot.
  const load = loadGenerator(berth, slug)
  await Bun.sleep(BASELINE_MS)
  const before = load.take()
  const started = performance.now()
  const created = await post(berth, `/sites/${slug}/snapshot/`, key)
  let snap: { id: string; status: string; size_bytes: number; file_count: number }
  do {
    await Bun.sleep(10)
    snap = await get(berth, `/sites/${slug}/snapshots/${created.id}/`, key)
  } while (snap.status === 'creating')
  const snapshotMs = performance.now() - started
  const during = load.take()
  await load.stop()
  if (snap.status !== 'ready') throw new Error(`snapshot ${snap.status}`)
  const frozenMs = logged(berth, 'archive ready', created.id, 'frozen_ms')
  const compressMs = logged(berth, 'archive ready', created.id, 'compress_ms')
  const storeMs = logged(berth, 'archive ready', created.id, 'store_ms')

  const restoreStarted = performance.now()
  await post(berth, `/sites/${slug}/snapshots/${snap.id}/restore/`, key)
  let restored: { status: string; error: string | null }
  do {
    await Bun.sleep(10)
    restored = await get(berth, `/sites/${slug}/snapshots/${snap.id}/`, key)
  } while (restored.status === 'restoring')
  const restoreMs = performance.now() - restoreStarted
  if (restored.error) throw new Error(`restore: ${restored.error}`)
  const downMs = logged(berth, 'archive restored', snap.id, 'down_ms')
  const fetchMs = logged(berth, 'archive restored', snap.id, 'fetch_ms')
  const restartMs = logged(berth, 'archive restored', snap.id, 'restart_ms')
  await del(berth, `/sites/${slug}/snapshots/${snap.id}/`, key)

  // The reference: the same archive work with the tools alone, on the same volume.
  const work = join(dataDir, 'reference')
  mkdirSync(work, { recursive: true })
  const refStarted = performance.now()
  run(['sh', '-c', `tar --numeric-owner -C '${home}' --exclude=./logs -cf - . | zstd -3 -q -o '${work}/ref.tar.zst'`])
  const refSnapshotMs = performance.now() - refStarted
  mkdirSync(join(work, 'out'))
  const refRestoreStarted = performance.now()
  run(['sh', '-c', `zstd -d -q -c '${work}/ref.tar.zst' | tar --numeric-owner -C '${work}/out' -xf -`])
  const refRestoreMs = performance.now() - refRestoreStarted
  rmSync(work, { recursive: true, force: true })
  return { snapshotMs, frozenMs, compressMs, storeMs, storedBytes: snap.size_bytes, fileCount: snap.file_count, restoreMs, downMs, fetchMs, restartMs, refSnapshotMs, refRestoreMs, before, during }
}

/** CLIENTS closed loops of GET /ping.html through the edge; `take` returns the figures so far and starts afresh. */
function loadGenerator(berth: Berth, slug: string) {
  let samples: number[] = []
  let errors = 0
  let running = true
  const loop = async () => {
    while (running) {
      const t = performance.now()
      try {
        const res = await fetch(`${berth.url}/ping.html`, { headers: { host: `${slug}.localhost:${berth.port}` } })
        await res.arrayBuffer()
        if (res.status === 200) samples.push(performance.now() - t)
        else errors++
      } catch {
        errors++
      }
    }
  }
  const loops = Array.from({ length: CLIENTS }, loop)
  return {
    take(): Latency {
      const figures = { p50: percentile(samples, 50), p99: percentile(samples, 99), max: Math.max(...samples), count: samples.length, errors }
      samples = []
      errors = 0
      return figures
    },
    async stop() {
      running = false
      await Promise.all(loops)
    },
  }
}

function report(rounds: Round[], machine: { loadBefore: number[]; loadAfter: number[]; contention: { stealPercent: number; otherPercent: number } }) {
  const m = (f: (r: Round) => number) => median(rounds.map(f))
  const figures = {
    date: new Date().toISOString(),
    commit: spawnSync(['git', 'rev-parse', '--short', 'HEAD']).stdout.toString().trim(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg_before: machine.loadBefore.map((l) => +l.toFixed(2)), loadavg_after: machine.loadAfter.map((l) => +l.toFixed(2)), steal_percent: +machine.contention.stealPercent.toFixed(1), others_percent_of_cpu: +machine.contention.otherPercent.toFixed(1) },
    site: { files: FILES, bytes: FILES * FILE_BYTES, stored_bytes: m((r) => r.storedBytes), file_count: m((r) => r.fileCount) },
    rounds: rounds.length,
    snapshot_ms: Math.round(m((r) => r.snapshotMs)),
    frozen_ms: Math.round(m((r) => r.frozenMs)),
    snapshot_compress_ms: Math.round(m((r) => r.compressMs)),
    snapshot_store_ms: Math.round(m((r) => r.storeMs)),
    restore_ms: Math.round(m((r) => r.restoreMs)),
    restore_down_ms: Math.round(m((r) => r.downMs)),
    restore_fetch_ms: Math.round(m((r) => r.fetchMs)),
    restore_restart_ms: Math.round(m((r) => r.restartMs)),
    reference_snapshot_ms: Math.round(m((r) => r.refSnapshotMs)),
    reference_restore_ms: Math.round(m((r) => r.refRestoreMs)),
    snapshot_vs_reference: +(m((r) => r.snapshotMs) / m((r) => r.refSnapshotMs)).toFixed(2),
    restore_vs_reference: +(m((r) => r.restoreMs) / m((r) => r.refRestoreMs)).toFixed(2),
    latency_before: { p50_ms: +m((r) => r.before.p50).toFixed(2), p99_ms: +m((r) => r.before.p99).toFixed(2), max_ms: +m((r) => r.before.max).toFixed(1), requests: m((r) => r.before.count) },
    latency_during: { p50_ms: +m((r) => r.during.p50).toFixed(2), p99_ms: +m((r) => r.during.p99).toFixed(2), max_ms: +m((r) => r.during.max).toFixed(1), requests: m((r) => r.during.count), errors: rounds.reduce((n, r) => n + r.during.errors, 0) },
    p50_ratio: +(m((r) => r.during.p50 / r.before.p50)).toFixed(2),
    p99_ratio: +(m((r) => r.during.p99 / r.before.p99)).toFixed(2),
  }
  console.log(`\nSnapshots of a vps site, ${FILES} files, ${(FILES * FILE_BYTES / 1e6).toFixed(1)} MB of random bytes (median of ${rounds.length} rounds)`)
  console.log(`  snapshot   ${ms(figures.snapshot_ms)} to ready: frozen ${ms(figures.frozen_ms)}, compress ${ms(figures.snapshot_compress_ms)}, store ${ms(figures.snapshot_store_ms)}; reference tar|zstd ${ms(figures.reference_snapshot_ms)} (${figures.snapshot_vs_reference}x)`)
  console.log(`  restore    ${ms(figures.restore_ms)} to ready (site answering): fetch+unpack ${ms(figures.restore_fetch_ms)} while serving, then frozen or down ${ms(figures.restore_down_ms)} (restart ${ms(figures.restore_restart_ms)}); reference zstd -d|tar -x ${ms(figures.reference_restore_ms)} (${figures.restore_vs_reference}x)`)
  console.log(`  latency    before p50 ${figures.latency_before.p50_ms} ms p99 ${figures.latency_before.p99_ms} ms max ${figures.latency_before.max_ms} ms; during p50 ${figures.latency_during.p50_ms} ms p99 ${figures.latency_during.p99_ms} ms max ${figures.latency_during.max_ms} ms; ratio p50 ${figures.p50_ratio}x p99 ${figures.p99_ratio}x (${figures.latency_during.requests} requests during, ${figures.latency_during.errors} errors)`)
  console.log(`  machine    ${figures.machine.cpus} CPUs, load ${figures.machine.loadavg_before.join(' ')} → ${figures.machine.loadavg_after.join(' ')}, steal ${figures.machine.steal_percent}%, other processes ${figures.machine.others_percent_of_cpu}% of all CPU (ours included in "other": Berth, Docker, tar)`)
  if (JSON_OUT) console.log(JSON.stringify(figures, null, 2))
}

const ms = (v: number) => `${Math.round(v)} ms`

async function start(binary: string, dataDir: string): Promise<Berth> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const logFile = join(dataDir, 'berth.log')
  const proc = track(spawn([binary, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--site-url', url], {
    // SSH ports of its own: other Berths (test suites) may share the engine.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', BERTH_CONTAINERS_FIREWALL: 'false', HOME: process.env.HOME ?? '/root', BERTH_SSH_PORT_RANGE: `${port + 1}-${port + 20}` },
    stdout: Bun.file(logFile),
    stderr: Bun.file(`${logFile}.err`),
  }))
  await waitFor(async () => (await fetch(`${url}/api/v1/status/`)).status === 200, 15_000)
  return {
    url, port, logFile,
    async stop() {
      if (proc.exitCode === null) proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

/** A field of Berth's log line `msg` about archive `id`. */
function logged(berth: Berth, msg: string, id: string, field: string): number {
  const lines = readFileSync(berth.logFile, 'utf8').split('\n').filter((l) => l.includes(`"msg":"${msg}"`) && l.includes(id))
  const value = lines.length > 0 ? (JSON.parse(lines.at(-1)!) as Record<string, number>)[field] : undefined
  if (value === undefined) throw new Error(`no '${msg}' log line for ${id}`)
  return value
}

async function buy(berth: Berth, slug: string): Promise<string> {
  const body = (path: string, data: unknown, secret?: string) =>
    fetch(`${berth.url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret ? { 'x-checkout-secret': secret } : {}) }, body: JSON.stringify(data) }).then((r) => r.json() as Promise<any>)
  const created = (await body('/acp/checkouts/', { sku: 'svc_business_monthly' })).data
  await body(`/acp/checkouts/${created.id}/update/`, { requested_slug: slug }, created.checkout_secret)
  const done = (await body(`/acp/checkouts/${created.id}/complete/`, { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }, created.checkout_secret)).data
  await waitFor(async () => (await get(berth, `/sites/${slug}/`, done.api_key)).status === 'active', 60_000, 50)
  return done.api_key
}

async function call(berth: Berth, method: string, path: string, key: string) {
  const res = await fetch(`${berth.url}/api/v1${path}`, { method, headers: { authorization: `Bearer ${key}` } })
  const json = (await res.json()) as any
  if (!json.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json.error)}`)
  return json.data
}
const get = (b: Berth, path: string, key: string) => call(b, 'GET', path, key)
const post = (b: Berth, path: string, key: string) => call(b, 'POST', path, key)
const del = (b: Berth, path: string, key: string) => call(b, 'DELETE', path, key)

/** Runs a shell script in the container as the site user. */
async function shell(containerId: string, script: string): Promise<void> {
  const exec = await docker.getContainer(containerId).exec({ Cmd: ['sh', '-c', script], User: '1000:1000', WorkingDir: '/home/site', AttachStdout: true, AttachStderr: true })
  const stream = await exec.start({})
  stream.resume()
  await new Promise((done) => stream.on('end', done))
  const { ExitCode } = await exec.inspect()
  if (ExitCode !== 0) throw new Error(`script exited ${ExitCode}`)
}

function run(cmd: string[]) {
  const r = spawnSync(cmd)
  if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')}: ${r.stderr.toString()}`)
}

await main()
