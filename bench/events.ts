/**
 * `bun run bench:events`: webhooks (issue 41). Berth in-process (buildApp's test role on a fresh
 * data folder: a real SQLite file, the real event log, fan-out, sender and HTTP transport, the
 * system clock; no containers: a recording runtime), its API served over
 * a loopback socket (Bun.serve), and the receivers in a process of their own
 * (bench/webhook-receivers.ts), so that only Berth's work is on Berth's event loop.
 *
 * 1. Event to delivery: 1,000 events recorded one after another (each a store transaction, as a
 *    state change records it), each waited for at a fast receiver: p50 and p99 from the record to
 *    the receiver having the request.
 * 2. Throughput: 100 accounts with one endpoint each, half of them answering after 2 s; 10,000
 *    events (100 per account, recorded in 100 transactions of 100 with the sender stopped, so
 *    that the window measures the deliveries and not the recording). GET /auth/whoami/ is timed
 *    one request at a time, by a client process of its own (bench/events-whoami.ts), for 20 s
 *    before (no deliveries) and for 20 s from the sender's start; the goal is the median during
 *    within 1.2 times the median before. Exits 1 when it is not.
 */
import { createApp } from '../src/api/app'
import { buildApp } from '../src/compose/app'
import { loadConfig } from '../src/config/config'
import { systemClock } from '../src/lib/clock'
import { memoryLogger } from '../src/lib/logger'
import { FakeDatabaseRuntime } from '../test/helpers/database-double'
import { RecordingRuntime } from '../test/helpers/recording-runtime'
import { cleanupOnExit, tempDir } from './processes'

const LATENCY_EVENTS = 1_000
const ENDPOINTS = 100
const SLOW_MS = 2_000
const EVENTS = 10_000
/** Each whoami window: before the run, and from the run's start (every endpoint busy throughout). */
const WINDOW_MS = 20_000
const GOAL = 1.2

cleanupOnExit()
const now = () => performance.timeOrigin + performance.now()
const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((values.length * p) / 100))]!
const ms = (v: number) => `${v.toFixed(2)} ms`

const dir = tempDir('berth-bench-events-')
const config = loadConfig({ env: { BERTH_SERVER_DATA_DIR: dir, BERTH_SERVER_TRUSTED_PROXIES: '127.0.0.1', BERTH_OUTBOUND_ALLOW_NETWORKS: '127.0.0.0/8' }, file: null })
const runtime = new RecordingRuntime()
const built = buildApp(config, 'test', { clock: systemClock, log: memoryLogger(), runtime, databaseRuntime: new FakeDatabaseRuntime(), firewall: null })
const services = built.services
const app = createApp(services)
const sender = services.webhookSender
sender.start()
const api = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => app.handle(req) })
const call = async (method: string, path: string, opts: { key?: string; body?: unknown; ip?: string } = {}) => {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'x-forwarded-for': opts.ip ?? '127.0.0.1' }
  if (opts.key) headers.authorization = `Bearer ${opts.key}`
  const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) }))
  return { status: res.status, json: (await res.json()) as any }
}
let registered = 0
const register = async () => {
  registered++
  const res = await call('POST', '/api/v1/auth/register/', { body: {}, ip: `10.9.${registered >> 8}.${registered & 255}` })
  if (res.status !== 201) throw new Error(JSON.stringify(res.json))
  return { key: res.json.data.api_key as string, accountId: res.json.data.account_id as string }
}

const receivers = Bun.spawn(['bun', 'bench/webhook-receivers.ts', String(ENDPOINTS / 2 + 1), String(ENDPOINTS / 2), String(SLOW_MS)], { stdout: 'pipe', stderr: 'inherit' })
const arrived = new Map<string, number>()
let onArrival: (id: string) => void = () => {}
const waiters = new Map<string, () => void>()
let portsLine: (ports: number[]) => void = () => {}
const portsReady = new Promise<number[]>((resolve) => (portsLine = resolve))
void (async () => {
  let buffered = ''
  const reader = receivers.stdout.getReader()
  const decoder = new TextDecoder()
  for (;;) {
    const { value, done } = await reader.read()
    if (done) break
    buffered += decoder.decode(value, { stream: true })
    let nl: number
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl)
      buffered = buffered.slice(nl + 1)
      const [word, a, b] = line.split(' ')
      if (word === 'ports') portsLine(a!.split(',').map(Number))
      if (word === 'got' && !arrived.has(a!)) {
        arrived.set(a!, Number(b))
        waiters.get(a!)?.()
        onArrival(a!)
      }
    }
  }
})()
const [latencyPort, ...ports] = await portsReady

async function endpointFor(port: number) {
  const account = await register()
  const made = await call('POST', '/api/v1/webhooks/', { key: account.key, body: { url: `http://127.0.0.1:${port}/hook` } })
  if (made.status !== 201) throw new Error(JSON.stringify(made.json))
  return account
}

// 1. Event to delivery.
const single = await endpointFor(latencyPort!)
const latencies: number[] = []
for (let i = 0; i < LATENCY_EVENTS; i++) {
  const started = now()
  const event = services.events.record({ type: 'key.created', accountId: single.accountId, data: { i } })
  await new Promise<void>((resolve) => {
    if (arrived.has(event.id)) return resolve()
    waiters.set(event.id, resolve)
  })
  waiters.delete(event.id)
  latencies.push(arrived.get(event.id)! - started)
}
console.log(`event to delivery over ${LATENCY_EVENTS} events: p50 ${ms(pct(latencies, 50))}, p99 ${ms(pct(latencies, 99))}`)

// 2. Throughput, with whoami timed before and during.
const accounts: { key: string; accountId: string }[] = []
for (const port of ports) accounts.push(await endpointFor(port))
const whoamiKey = accounts[0]!.key
/** whoami timed by a client process of its own for `windowMs`. */
async function whoami(windowMs: number): Promise<{ p50: number; p99: number; n: number }> {
  const client = Bun.spawn(['bun', 'bench/events-whoami.ts', `http://127.0.0.1:${api.port}`, whoamiKey, String(windowMs)], { stdout: 'pipe', stderr: 'inherit' })
  const text = await new Response(client.stdout).text()
  if ((await client.exited) !== 0) throw new Error('the whoami client failed')
  return JSON.parse(text) as { p50: number; p99: number; n: number }
}
const before = await whoami(WINDOW_MS)

// Deliveries of the run, counted as they arrive (nothing per whoami request on Berth's loop).
const runIds = new Set<string>()
let fastArrived = 0
let allArrived = 0
let fastDoneAt = 0
let allDoneAt = 0
const fastIds = new Set<string>()
onArrival = (id) => {
  if (!runIds.has(id)) return
  allArrived++
  if (fastIds.has(id) && ++fastArrived === fastIds.size) fastDoneAt = now()
  if (allArrived === EVENTS) allDoneAt = now()
}
// The events first, the sender stopped (100 transactions of 100: what the state changes cost is
// theirs, not the deliveries'); then the sender started with whoami timed from that moment.
sender.stop()
for (let i = 0; i < EVENTS; i += ENDPOINTS) {
  services.store.write(() => {
    for (const [n, a] of accounts.entries()) {
      const id = services.events.record({ type: 'deployment.succeeded', accountId: a.accountId, data: { i: i + n } }).id
      runIds.add(id)
      if (n < ENDPOINTS / 2) fastIds.add(id)
    }
  })
}
await Bun.sleep(1000)
const began = now()
const timed = whoami(WINDOW_MS)
sender.start()
const during = await timed
while (allArrived < EVENTS) await Bun.sleep(100)
const total = allDoneAt - began
console.log(`whoami without deliveries: p50 ${ms(before.p50)}, p99 ${ms(before.p99)} (${before.n} requests in ${WINDOW_MS / 1000} s)`)
console.log(`whoami during ${EVENTS} events to ${ENDPOINTS} endpoints (the run's first ${WINDOW_MS / 1000} s): p50 ${ms(during.p50)}, p99 ${ms(during.p99)} (${during.n} requests)`)
console.log(`delivered: the fast endpoints' ${fastIds.size} in ${((fastDoneAt - began) / 1000).toFixed(1)} s, all ${EVENTS} in ${(total / 1000).toFixed(1)} s (a slow endpoint's 100 take 100 x 2 s: one at a time, in order)`)
const ratio = during.p50 / before.p50
console.log(`whoami p50 during / before: ${ratio.toFixed(2)} (goal <= ${GOAL}): ${ratio <= GOAL ? 'PASS' : 'FAIL'}`)
sender.stop()
receivers.kill()
void api.stop(true)
await services.jobs.stop()
built.close()
runtime.close()
process.exit(ratio <= GOAL ? 0 : 1)
