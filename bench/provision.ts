/**
 * `bun bench/provision.ts [--count 20]`: time from the checkout's complete call (direct test
 * payment, static image) to the first 200 from the new site through Berth's edge, for `count`
 * purchases in a row, against the compiled binary and the real Docker engine.
 *
 * The reference measured in the same run is Docker's own create + start of the same image to
 * its first HTTP answer (no Berth), so the overhead Berth adds is visible whatever the machine's
 * load. Targets (issue 3): p50 under 500 ms, p95 under 1 s.
 */
import { Database } from 'bun:sqlite'
import { spawn } from 'bun'
import Docker from 'dockerode'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BINARY, freePort, waitFor } from './processes'
import { median } from './stats'

const TARGETS = { p50Ms: 500, p95Ms: 1000 }
const IMAGE = 'berth/static:1'
const docker = new Docker({ socketPath: '/var/run/docker.sock' })

const count = Number(process.argv[process.argv.indexOf('--count') + 1]) || 20
const percentile = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)]!

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-bench-provision-'))
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const proc = spawn([BINARY, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--site-url', url], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', BERTH_CONTAINERS_FIREWALL: 'false', BERTH_RATE_LIMITS_CHECKOUT_CREATE: '10000/hour', BERTH_RATE_LIMITS_CHECKOUT_POLL: '100000/minute', BERTH_SERVER_LOG_LEVEL: 'warn' },
    stdout: 'ignore',
    stderr: 'inherit',
  })
  try {
    await waitFor(async () => (await fetch(`${url}/api/v1/status/`)).status === 200, 10_000)
    // Interleaved, so that load from a neighbour on the shared machine hits both alike.
    const berth: number[] = []
    const reference: number[] = []
    for (let i = 0; i < count; i++) {
      berth.push(await purchase(url, port, `bench-${i}-${Math.random().toString(36).slice(2, 7)}`))
      reference.push(await dockerAlone())
    }
    report(berth, reference)
  } finally {
    proc.kill('SIGTERM')
    await proc.exited
    await removeSites(join(dataDir, 'berth.db'))
    rmSync(dataDir, { recursive: true, force: true })
  }
}

/** One purchase: create, set the slug, then time complete → first 200 through the edge. */
async function purchase(url: string, port: number, slug: string): Promise<number> {
  const post = (path: string, body: unknown, secret?: string) =>
    fetch(`${url}/api/v1${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret ? { 'x-checkout-secret': secret } : {}) }, body: JSON.stringify(body) })
  const created = (await (await post('/acp/checkouts/', { sku: 'svc_starter_monthly' })).json()).data
  await post(`/acp/checkouts/${created.id}/update/`, { requested_slug: slug }, created.checkout_secret)
  const started = performance.now()
  const done = await post(`/acp/checkouts/${created.id}/complete/`, { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }, created.checkout_secret)
  if (done.status !== 201) throw new Error(`complete: ${done.status} ${await done.text()}`)
  await waitFor(async () => (await fetch(`${url}/`, { headers: { host: `${slug}.localhost:${port}` } })).status === 200, 30_000, 2)
  return performance.now() - started
}

/** The reference: Docker alone creating and starting the same image to its first answer. */
async function dockerAlone(): Promise<number> {
  const started = performance.now()
  const container = await docker.createContainer({ Image: IMAGE, HostConfig: { Init: true, AutoRemove: false } })
  try {
    await container.start()
    const ip = (await container.inspect()).NetworkSettings.Networks.bridge!.IPAddress
    await waitFor(async () => (await fetch(`http://${ip}:8080/`)).status === 200, 30_000, 2)
    return performance.now() - started
  } finally {
    await container.remove({ force: true })
  }
}

function report(berth: number[], reference: number[]) {
  const f = (ms: number) => `${ms.toFixed(0)} ms`
  const p50 = percentile(berth, 50)
  const p95 = percentile(berth, 95)
  console.log(`\nProvisioning: complete call → first 200 through the edge (${berth.length} purchases, static image)`)
  console.log(`  berth      p50 ${f(p50)}  p95 ${f(p95)}  min ${f(Math.min(...berth))}  max ${f(Math.max(...berth))}`)
  console.log(`  reference  docker create+start → first answer (default bridge, no volume): p50 ${f(percentile(reference, 50))}  p95 ${f(percentile(reference, 95))}`)
  console.log(`  overhead   berth p50 / docker alone: ${(p50 / median(reference)).toFixed(2)}x`)
  console.log(`  p50 < ${TARGETS.p50Ms} ms: ${p50 < TARGETS.p50Ms ? 'PASS' : 'FAIL'}   p95 < ${TARGETS.p95Ms} ms: ${p95 < TARGETS.p95Ms ? 'PASS' : 'FAIL'}`)
  if (p50 >= TARGETS.p50Ms || p95 >= TARGETS.p95Ms) process.exitCode = 1
}

/** Removes the containers, networks and volumes of the benchmark's Berth instance. */
async function removeSites(dbPath: string) {
  const db = new Database(dbPath, { readonly: true })
  const instance = (db.query("SELECT value FROM settings WHERE key = 'instance_id'").get() as { value: string } | null)?.value
  db.close()
  if (!instance) return
  const filters = { label: [`dev.berth.instance=${instance}`] }
  for (const c of await docker.listContainers({ all: true, filters })) await docker.getContainer(c.Id).remove({ force: true }).catch(() => {})
  for (const n of await docker.listNetworks({ filters })) await docker.getNetwork(n.Id).remove().catch(() => {})
  for (const v of (await docker.listVolumes({ filters })).Volumes ?? []) await docker.getVolume(v.Name).remove().catch(() => {})
}

await main()
