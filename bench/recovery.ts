/**
 * `bun run bench:recovery [--runs 10]`: how long a site whose container is killed (`docker kill`)
 * or removed (`docker rm -f`) behind Berth's back takes to serve again through Berth's edge, on
 * the compiled binary and the real Docker engine; `runs` of each, interleaved.
 *
 * The references measured in the same run are Docker's own floor for the same repair: starting
 * the killed container again (`docker start` to its first answer) and creating + starting a new
 * one on the default bridge. Goal (issue 9): max under 2 s for both.
 */
import { Database } from 'bun:sqlite'
import { spawn } from 'bun'
import Docker from 'dockerode'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BINARY, freePort, waitFor } from './processes'

const GOAL_MAX_MS = 2_000
/** Between runs: longer than the healer's crash-loop window (5 s), so each kill counts as a first. */
const PAUSE_MS = 5_500
const IMAGE = 'berth/static:1'
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const runs = Number(process.argv[process.argv.indexOf('--runs') + 1]) || 10
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-bench-recovery-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const proc = spawn([BINARY, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--site-url', url], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', BERTH_CONTAINERS_FIREWALL: 'false', BERTH_SERVER_LOG_LEVEL: 'warn' },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  try {
    await waitFor(async () => (await fetch(`${url}/api/v1/status/`)).status === 200, 10_000)
    const slug = `recover-${Math.random().toString(36).slice(2, 7)}`
    await buy(url, port, slug)
    const instance = instanceOf(join(dataDir, 'berth.db'))
    const results = { kill: [] as number[], rm: [] as number[], dockerStart: [] as number[], dockerCreate: [] as number[] }
    for (let i = 0; i < runs; i++) {
      for (const how of ['kill', 'rm'] as const) {
        await Bun.sleep(PAUSE_MS)
        const [c] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instance}`, `dev.berth.site-slug=${slug}`] } })
        const started = performance.now()
        if (how === 'kill') await docker.getContainer(c!.Id).kill()
        else await docker.getContainer(c!.Id).remove({ force: true })
        await waitFor(async () => (await fetch(`${url}/`, { headers: { host: `${slug}.localhost:${port}` } })).status === 200, 30_000, 5)
        results[how].push(performance.now() - started)
      }
      results.dockerStart.push(await dockerRestart())
      results.dockerCreate.push(await dockerCreate())
    }
    report(results)
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
    await removeSites(join(dataDir, 'berth.db'))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

async function buy(url: string, port: number, slug: string) {
  const post = (path: string, body: unknown, secret?: string) =>
    fetch(`${url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret ? { 'x-checkout-secret': secret } : {}) }, body: JSON.stringify(body) })
  const created = (await (await post('/acp/checkouts/', { sku: 'svc_starter_monthly' })).json()).data
  await post(`/acp/checkouts/${created.id}/update/`, { requested_slug: slug }, created.checkout_secret)
  const done = await post(`/acp/checkouts/${created.id}/complete/`, { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }, created.checkout_secret)
  if (done.status !== 201) throw new Error(`complete: ${done.status} ${await done.text()}`)
  await waitFor(async () => (await fetch(`${url}/`, { headers: { host: `${slug}.localhost:${port}` } })).status === 200, 60_000)
}

/** Docker alone, the floor under a kill: start a stopped container again, to its first answer. */
async function dockerRestart(): Promise<number> {
  const container = await docker.createContainer({ Image: IMAGE, HostConfig: { Init: true } })
  try {
    await container.start()
    await container.kill()
    await container.wait()
    const started = performance.now()
    await container.start()
    const ip = (await container.inspect()).NetworkSettings.Networks.bridge!.IPAddress
    await waitFor(async () => (await fetch(`http://${ip}:8080/`)).status === 200, 30_000, 5)
    return performance.now() - started
  } finally {
    await container.remove({ force: true })
  }
}

/** Docker alone, the floor under a removal: create and start the same image, to its first answer. */
async function dockerCreate(): Promise<number> {
  const started = performance.now()
  const container = await docker.createContainer({ Image: IMAGE, HostConfig: { Init: true } })
  try {
    await container.start()
    const ip = (await container.inspect()).NetworkSettings.Networks.bridge!.IPAddress
    await waitFor(async () => (await fetch(`http://${ip}:8080/`)).status === 200, 30_000, 5)
    return performance.now() - started
  } finally {
    await container.remove({ force: true })
  }
}

function report(r: { kill: number[]; rm: number[]; dockerStart: number[]; dockerCreate: number[] }) {
  const f = (ms: number) => `${ms.toFixed(0)} ms`
  console.log(`\nRecovery: the site's container killed or removed behind Berth's back → first 200 through the edge (${runs} runs each)`)
  const line = (name: string, berth: number[], ref: number[], refName: string) => {
    const max = Math.max(...berth)
    console.log(`  ${name.padEnd(14)} berth p50 ${f(percentile(berth, 50))}  max ${f(max)}   ${refName} p50 ${f(percentile(ref, 50))}   ratio p50 ${(percentile(berth, 50) / percentile(ref, 50)).toFixed(2)}x   max < ${GOAL_MAX_MS} ms: ${max < GOAL_MAX_MS ? 'PASS' : 'FAIL'}`)
    if (max >= GOAL_MAX_MS) process.exitCode = 1
  }
  line('docker kill', r.kill, r.dockerStart, 'docker start alone')
  line('docker rm -f', r.rm, r.dockerCreate, 'docker create+start alone')
}

function instanceOf(dbPath: string): string {
  const db = new Database(dbPath, { readonly: true })
  const row = db.query("SELECT value FROM settings WHERE key = 'instance_id'").get() as { value: string }
  db.close()
  return row.value
}

async function removeSites(dbPath: string) {
  const instance = instanceOf(dbPath)
  const filters = { label: [`dev.berth.instance=${instance}`] }
  for (const c of await docker.listContainers({ all: true, filters })) await docker.getContainer(c.Id).remove({ force: true }).catch(() => {})
  for (const n of await docker.listNetworks({ filters })) await docker.getNetwork(n.Id).remove().catch(() => {})
  for (const v of (await docker.listVolumes({ filters })).Volumes ?? []) await docker.getVolume(v.Name).remove().catch(() => {})
}

await main()
