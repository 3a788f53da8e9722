/**
 * `bun bench/restore.ts [--rounds 3] [--mib 512] [--json]` (or `bun run bench:restore`): the time
 * of `berth restore` for the three-site drill (shared, vps and dedicated sites; the vps site holds
 * MIB MiB of random bytes in 8 MiB files, the worst case for compression), and per GiB of site
 * data, on the compiled binary and the real Docker engine, from a file:// bucket.
 *
 * The bucket is made once by Berth itself (offsite.url a file:// folder, `berth offsite push`,
 * and the copy made as it stops); then per
 * round: the instance's containers, volumes and networks and the data folder are removed,
 * `berth restore --json` runs (its phases from `timings_ms`), and the floor is measured on the
 * same objects without Berth: Debian's `age -d` of the store and of every archive, `zstd -d` of
 * the store, and `zstd -d | tar -x` of each site's newest archive into an empty folder (no
 * container, no Docker). The ratio is berth restore against that floor. Medians over the rounds.
 */
import { Database } from 'bun:sqlite'
import { spawn, spawnSync } from 'bun'
import { mkdirSync, readdirSync, rmSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { join } from 'node:path'
import type { OffsiteManifest } from '../src/domain/offsite/manifest'
import { ageKeyPair, latestManifest } from '../test/helpers/age-keys'
import { docker, removeSitesOf } from '../test/helpers/sites'
import { cleanup, cleanupOnExit, snapshotBinary, startBerth, tempDir, waitFor } from './processes'
import { median } from './stats'

const arg = (name: string, fallback: number) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : fallback)
const ROUNDS = arg('--rounds', 3)
const MIB = arg('--mib', 512)
const JSON_OUT = process.argv.includes('--json')
const PLANS = ['svc_starter_monthly', 'svc_business_monthly', 'svc_performance_monthly']
const GIB = 1024 ** 3

interface Round {
  restoreMs: number
  phases: Record<string, number>
  siteMs: number[]
  siteBytes: number
  floorMs: number
}

async function main() {
  cleanupOnExit()
  const binary = snapshotBinary()
  const dataDir = tempDir('berth-bench-restore-')
  const bucket = tempDir('berth-bench-bucket-')
  const keys = ageKeyPair(tempDir('berth-bench-age-'))
  const sshBase = 45_000 + Math.floor(Math.random() * 100) * 100
  const env = { BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}`, BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_DOCKER_SOCKET: '/var/run/docker.sock', BERTH_OFFSITE_URL: `file://${bucket}`, BERTH_OFFSITE_AGE_RECIPIENTS: keys.recipient }
  const berth = await startBerth(dataDir, 20, env, binary)
  const instance = instanceOf(dataDir)
  const loadBefore = loadavg()
  try {
    const sites = await Promise.all(PLANS.map((sku) => buy(berth.url, sku)))
    console.log(`sites ${sites.map((s) => s.slug).join(', ')}; writing ${MIB} MiB into ${sites[1]!.slug}...`)
    await shell(instance, sites[1]!.slug, `set -e; mkdir -p data; for i in $(seq 1 ${Math.ceil(MIB / 8)}); do head -c 8388608 /dev/urandom > data/f$i; done`)
    for (const s of sites) await shell(instance, s.slug, `echo "<h1>${s.slug}</h1>" > public/index.html`)
    for (const s of sites.slice(1)) await call(berth.url, 'POST', `/sites/${s.slug}/snapshot/`, s.key)
    console.log('waiting for the snapshots and the first daily backups (the first maintenance pass, 30 s after start)...')
    for (const s of sites) {
      await waitFor(async () => {
        const backups = await call(berth.url, 'GET', `/sites/${s.slug}/backups/`, s.key)
        const snaps = s === sites[0] ? [] : await call(berth.url, 'GET', `/sites/${s.slug}/snapshots/`, s.key)
        return backups.some((b: { status: string }) => b.status === 'ready') && snaps.every((a: { status: string }) => a.status === 'ready')
      }, 600_000, 500)
    }
    const push = spawnSync([binary, 'offsite', 'push', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdout: 'inherit', stderr: 'inherit' })
    if (push.exitCode !== 0) throw new Error('berth offsite push failed')
    // The public half of the box's signing key, which berth restore wants (--signing-key).
    const signingKey = JSON.parse(spawnSync([binary, 'offsite', 'status', '--json', '--data-dir', dataDir], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env }, stdout: 'pipe' }).stdout.toString()).signing_key as string
    await berth.stop()
    const { manifest } = await latestManifest(bucket, keys.identityFile)

    const rounds: Round[] = []
    for (let r = 0; r < ROUNDS; r++) {
      await removeSitesOf(instance)
      for (const name of readdirSync(dataDir)) rmSync(join(dataDir, name), { recursive: true, force: true })
      const started = performance.now()
      const proc = spawn([binary, 'restore', '--from', `file://${bucket}`, '--identity', keys.identityFile, '--signing-key', signingKey, '--data-dir', dataDir, '--json'], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', BERTH_CONTAINERS_FIREWALL: 'false', ...env }, stdout: 'pipe', stderr: 'pipe' })
      const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
      const restoreMs = performance.now() - started
      if (code !== 0) throw new Error(`berth restore exited ${code}: ${out}\n${err}`)
      const result = JSON.parse(out) as { timings_ms: Record<string, number>; sites: { bytes: number | null; ms: number }[] }
      const floorMs = floor(bucket, manifest, keys.identityFile)
      const round = { restoreMs, phases: result.timings_ms, siteMs: result.sites.map((s) => s.ms), siteBytes: result.sites.reduce((n, s) => n + (s.bytes ?? 0), 0), floorMs }
      rounds.push(round)
      console.log(`round ${r + 1}/${ROUNDS}: berth restore ${ms(restoreMs)} (${Object.entries(round.phases).map(([k, v]) => `${k} ${ms(v)}`).join(', ')}; sites ${round.siteMs.map(ms).join(' / ')}), floor age -d + zstd -d + tar -x ${ms(floorMs)}`)
    }
    report(rounds, manifest, { loadBefore, loadAfter: loadavg() })
  } finally {
    await berth.stop()
    await removeSitesOf(instance)
    cleanup()
  }
}

/** The same objects by hand: age -d every object, zstd -d the store, zstd -d | tar -x each site's newest archive. */
function floor(bucket: string, m: OffsiteManifest, identity: string): number {
  const out = tempDir('berth-bench-floor-')
  const started = performance.now()
  sh(`age -d -i '${identity}' '${bucket}/${m.store.key}' | zstd -d -q -o '${out}/berth.db'`)
  for (const site of m.sites) {
    site.archives.forEach((a, i) => {
      const file = `${out}/${a.id}.tar.zst`
      sh(`age -d -i '${identity}' -o '${file}' '${bucket}/${a.key}'`)
      if (i === 0) {
        mkdirSync(`${out}/${site.slug}`)
        sh(`zstd -d -q -c '${file}' | tar --numeric-owner -C '${out}/${site.slug}' -xf -`)
      }
    })
  }
  const took = performance.now() - started
  rmSync(out, { recursive: true, force: true })
  return took
}

function report(rounds: Round[], m: OffsiteManifest, machine: { loadBefore: number[]; loadAfter: number[] }) {
  const med = (f: (r: Round) => number) => median(rounds.map(f))
  const siteBytes = med((r) => r.siteBytes)
  const objectBytes = m.store.bytes + m.sites.reduce((n, s) => n + s.archives.reduce((k, a) => k + a.bytes, 0), 0)
  const figures = {
    date: new Date().toISOString(),
    commit: spawnSync(['git', 'rev-parse', '--short', 'HEAD']).stdout.toString().trim(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg_before: machine.loadBefore.map((l) => +l.toFixed(2)), loadavg_after: machine.loadAfter.map((l) => +l.toFixed(2)) },
    rounds: rounds.length,
    sites: m.sites.length,
    archives: m.sites.reduce((n, s) => n + s.archives.length, 0),
    object_bytes: objectBytes,
    site_bytes: siteBytes,
    restore_ms: Math.round(med((r) => r.restoreMs)),
    phases_ms: Object.fromEntries(Object.keys(rounds[0]!.phases).map((k) => [k, Math.round(med((r) => r.phases[k]!))])),
    floor_ms: Math.round(med((r) => r.floorMs)),
    restore_vs_floor: +med((r) => r.restoreMs / r.floorMs).toFixed(2),
    restore_s_per_gib: +(med((r) => r.restoreMs) / 1000 / (siteBytes / GIB)).toFixed(1),
    floor_s_per_gib: +(med((r) => r.floorMs) / 1000 / (siteBytes / GIB)).toFixed(1),
  }
  console.log(`\nberth restore of the three-site drill, ${(siteBytes / 1e6).toFixed(0)} MB of site files, ${(objectBytes / 1e6).toFixed(0)} MB of objects in ${figures.archives} archives and the store (median of ${rounds.length} rounds)`)
  console.log(`  berth restore  ${ms(figures.restore_ms)}: ${Object.entries(figures.phases_ms).map(([k, v]) => `${k} ${ms(v)}`).join(', ')}`)
  console.log(`  floor          ${ms(figures.floor_ms)}: age -d of every object, zstd -d of the store, zstd -d | tar -x of each newest archive`)
  console.log(`  ratio          ${figures.restore_vs_floor}x the floor; ${figures.restore_s_per_gib} s per GiB of site files (floor ${figures.floor_s_per_gib} s)`)
  console.log(`  machine        ${figures.machine.cpus} CPUs, load ${figures.machine.loadavg_before.join(' ')} → ${figures.machine.loadavg_after.join(' ')}`)
  if (JSON_OUT) console.log(JSON.stringify(figures, null, 2))
}

const ms = (v: number) => `${Math.round(v)} ms`

function sh(script: string) {
  const r = spawnSync(['bash', '-c', `set -eo pipefail; ${script}`], { stderr: 'pipe' })
  if (r.exitCode !== 0) throw new Error(`${script}: ${r.stderr.toString()}`)
}

function instanceOf(dataDir: string): string {
  const db = new Database(join(dataDir, 'berth.db'), { readonly: true })
  const row = db.query("SELECT value FROM settings WHERE key = 'instance_id'").get() as { value: string }
  db.close()
  return row.value
}

async function buy(url: string, sku: string): Promise<{ slug: string; key: string }> {
  const slug = `rbench-${Math.random().toString(36).slice(2, 7)}`
  const body = (path: string, data: unknown, secret?: string) =>
    fetch(`${url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret ? { 'x-checkout-secret': secret } : {}) }, body: JSON.stringify(data) }).then((r) => r.json() as Promise<any>)
  const created = (await body('/acp/checkouts/', { sku })).data
  await body(`/acp/checkouts/${created.id}/update/`, { requested_slug: slug }, created.checkout_secret)
  const done = (await body(`/acp/checkouts/${created.id}/complete/`, { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }, created.checkout_secret)).data
  await waitFor(async () => (await call(url, 'GET', `/sites/${slug}/`, done.api_key)).status === 'active', 120_000, 100)
  return { slug, key: done.api_key }
}

async function call(url: string, method: string, path: string, key: string) {
  const res = await fetch(`${url}/api/v1${path}`, { method, headers: { authorization: `Bearer ${key}` } })
  const json = (await res.json()) as any
  if (!json.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json.error)}`)
  return json.data
}

/** Runs a shell script in the site's container as the site user, in its home. */
async function shell(instance: string, slug: string, script: string): Promise<void> {
  const exec = await docker.getContainer(`berth-${instance}-${slug}`).exec({ Cmd: ['sh', '-c', script], User: '1000:1000', WorkingDir: '/home/site', AttachStdout: true, AttachStderr: true })
  const stream = await exec.start({})
  stream.resume()
  await new Promise((done) => stream.on('end', done))
  const { ExitCode } = await exec.inspect()
  if (ExitCode !== 0) throw new Error(`script exited ${ExitCode}`)
}

await main()
