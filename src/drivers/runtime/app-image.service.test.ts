import { randomBytes } from 'node:crypto'
import { Agent, get as httpGet } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'
import { appControl, type AppEvent } from './app-control'
import { DEFAULT_PAGE_TITLE } from './default-page'
import { DockerRuntime } from './docker'
import { buildImages, IMAGES } from './images'
import type { SiteEndpoint, SiteSpec } from './types'

// berth/app:1 on the real engine: releases written into a site's home, switched by the
// supervisor through AppControl over the runtime's exec, answering on the site's port 8080.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 256, log: memoryLogger() })
const app = appControl(runtime)
const SLUG = 'apps'
const SPEC: SiteSpec = { siteId: 'id-apps', slug: SLUG, hostingType: 'shared', image: IMAGES.app, memoryMb: 512, cpuCores: 1, pidsLimit: 256, diskGb: 2, sshPort: null }
const RELEASES = '/home/site/app/releases'
let site: SiteEndpoint

/** Writes files (absolute paths in the container) through exec, as the site user. */
async function write(files: Record<string, string>): Promise<void> {
  const script = 'import json,os,sys\nfor p,c in json.load(sys.stdin).items():\n os.makedirs(os.path.dirname(p),exist_ok=True)\n open(p,"w").write(c)'
  const res = await runtime.exec(SLUG, ['python3', '-c', script], { stdin: JSON.stringify(files) })
  expect(res, res.output).toMatchObject({ exitCode: 0 })
}

/** A release folder: its files, and .berth/release.json as Berth writes it. */
async function release(id: string, runtimeName: string, processes: Record<string, string>, files: Record<string, string>, extra: object = {}): Promise<string> {
  const dir = `${RELEASES}/${id}`
  const all: Record<string, string> = {}
  for (const [path, body] of Object.entries(files)) all[`${dir}/${path}`] = body
  all[`${dir}/.berth/release.json`] = JSON.stringify({ id, runtime: runtimeName, processes, static_root: null, health_path: '/', stop_grace_seconds: 10, ...extra })
  await write(all)
  return dir
}

const NODE_SERVER = (tag: string) => `require('http').createServer((req, res) => {
  res.end('${tag} ' + process.env.GREETING + ' ' + (req.headers['x-forwarded-for'] || '-') + ' ' + process.env.BERTH_PROCESS)
}).listen(process.env.PORT)
process.on('SIGTERM', () => process.exit(0))
`

async function get(path = '/', headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://${site.address}:8080${path}`, { headers, signal: AbortSignal.timeout(5000) })
  return { status: res.status, body: await res.text() }
}

/** Requests one after another until stopped; counts answers and failures (a refused connection or a 5xx). */
function requestLoop(): { stop: () => Promise<{ ok: number; failed: string[] }> } {
  let running = true
  const failed: string[] = []
  let ok = 0
  const done = (async () => {
    while (running) {
      try {
        const res = await get()
        if (res.status >= 500) failed.push(`${res.status} ${res.body.slice(0, 80)}`)
        else ok++
      } catch (err) {
        failed.push(String(err))
      }
    }
  })()
  return { stop: async () => ((running = false), await done, { ok, failed }) }
}

const appLog = async () => (await runtime.exec(SLUG, ['cat', '/home/site/logs/app.log'])).output

async function until<T>(fn: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (ok(v) || Date.now() > deadline) return v
    await Bun.sleep(100)
  }
}

beforeAll(async () => {
  // Minutes the first time on a machine (debootstrap, Node and Bun from the registry); a second when up to date.
  await buildImages({
    socketPath: SOCKET,
    only: 'app',
    cacheDir: join(tmpdir(), 'berth-test-debian-cache'),
    npmCacheDir: join(tmpdir(), 'berth-test-npm-cache'),
    env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
  })
  site = await runtime.ensureSite(SPEC)
  await until(() => get().catch(() => ({ status: 0, body: '' })), (r) => r.status === 200, 15_000)
}, 900_000)

afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
}, 120_000)

describe('berth/app:1 and its supervisor', () => {
  it('serves the home\'s public/ before any release, and refuses a switch before the settings came', async () => {
    expect((await get()).body).toContain(DEFAULT_PAGE_TITLE)
    expect(await app.status(SLUG)).toEqual({ release: null, runtime: null, env: false, processes: [], port: null })
    const dir = await release('dep_static', 'static', {}, { 'dist/index.html': 'static release\n' }, { static_root: 'dist' })
    const refused = await app.switchRelease(SLUG, dir, 10)
    expect(refused).toMatchObject({ ok: false, error: expect.stringContaining('push them (env) first') })
  })

  it('switches to a static release, served by the front', async () => {
    expect(await app.pushEnv(SLUG, { GREETING: 'hello' })).toEqual({ restarted: [], port: null })
    expect(await app.switchRelease(SLUG, `${RELEASES}/dep_static`, 10)).toMatchObject({ ok: true })
    expect(await get()).toEqual({ status: 200, body: 'static release\n' })
    // Dot files are never served, as berth/php: 403.
    expect((await get('/.berth/release.json')).status).toBe(403)
  })

  it('runs a Node release on $PORT behind the front, with the settings, the edge\'s X-Forwarded-For and a zero-downtime switch', async () => {
    const r1 = await release('dep_node1', 'node', { web: 'node server.js' }, { 'server.js': NODE_SERVER('r1') })
    const r2 = await release('dep_node2', 'node', { web: 'node server.js' }, { 'server.js': NODE_SERVER('r2') })
    expect(await app.switchRelease(SLUG, r1, 30)).toMatchObject({ ok: true })
    // From the host, as from the edge: the container's gateway, whose X-Forwarded-For is believed.
    expect(await get('/', { 'X-Forwarded-For': '203.0.113.9' })).toEqual({ status: 200, body: 'r1 hello 203.0.113.9 web' })
    const status = await app.status(SLUG)
    expect(status).toMatchObject({ release: 'dep_node1', runtime: 'node', env: true, processes: [{ name: 'web', state: 'running', restarts: 0 }] })
    const loop = requestLoop()
    const times: number[] = []
    const ports = new Set<number>()
    for (let i = 0; i < 10; i++) {
      const answer = await app.switchRelease(SLUG, i % 2 === 0 ? r2 : r1, 30)
      expect(answer).toMatchObject({ ok: true, port: expect.any(Number) })
      if (answer.ok) times.push(answer.ms)
      if (answer.ok && answer.port) ports.add(answer.port)
      // As Berth does once its edge moved: the old web goes when its connections are closed.
      await app.retire(SLUG)
    }
    // A new web takes a port no process holds, of 3000-3009.
    expect([...ports].every((p) => p >= 3000 && p < 3010)).toBe(true)
    expect(ports.size).toBeGreaterThanOrEqual(2)
    const { ok, failed } = await loop.stop()
    expect(failed).toEqual([])
    expect(ok).toBeGreaterThan(20)
    expect((await get()).body).toMatch(/^r1 /)
    times.sort((a, b) => a - b)
    console.log(`switch of a small Node app: p50 ${times[5]} ms, max ${times[9]} ms over 10; ${ok} requests, none failed`)
    const link = await runtime.exec(SLUG, ['readlink', '/home/site/app/current'])
    expect(link.output.trim()).toBe('releases/dep_node1')
  })

  it('keeps the old web answering on its port after a switch until retire, then stops it once its connections are gone', async () => {
    const live = (await app.status(SLUG))!
    const r2 = `${RELEASES}/dep_node2`
    const switched = await app.switchRelease(SLUG, r2, 30)
    expect(switched).toMatchObject({ ok: true })
    const answersOn = async (port: number) => (await runtime.exec(SLUG, ['python3', '-c', `import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:${port}/').read().decode())`])).output
    expect(await answersOn(live.port!)).toMatch(/^r1 /)
    expect(switched.ok && (await answersOn(switched.port!))).toMatch(/^r2 /)
    await app.retire(SLUG)
    await until(() => answersOn(live.port!), (out) => !out.startsWith('r1 '), 10_000)
    expect(await answersOn(live.port!)).not.toMatch(/^r1 /)
    expect(await app.status(SLUG)).toMatchObject({ release: 'dep_node2', port: switched.ok ? switched.port : -1 })
    expect(await app.switchRelease(SLUG, `${RELEASES}/dep_node1`, 30)).toMatchObject({ ok: true })
    await app.retire(SLUG)
  })

  it('keeps the old release serving when the new web exits at once, with its exit code and output', async () => {
    const bad = await release('dep_bad', 'node', { web: 'echo "cannot find module express" >&2; exit 3' }, {})
    const answer = await app.switchRelease(SLUG, bad, 30)
    expect(answer).toMatchObject({ ok: false, exit_code: 3, error: expect.stringMatching(/exited with code 3 before answering on 30\d\d/) })
    expect(answer.ok === false && answer.output).toContain('cannot find module express')
    expect((await get()).body).toMatch(/^r1 hello/)
  })

  it('restarts web on a settings change without dropping a request', async () => {
    const loop = requestLoop()
    expect(await app.pushEnv(SLUG, { GREETING: 'bonjour' })).toEqual({ restarted: ['web'], port: expect.any(Number) })
    await app.retire(SLUG)
    const { failed } = await loop.stop()
    expect(failed).toEqual([])
    expect((await get()).body).toMatch(/^r1 bonjour [\d.]+ web$/)
    // exec, the console and berth sites shell start through berth-env on an app site.
    const inEnv = await runtime.exec(SLUG, ['berth-env', 'sh', '-c', 'echo "$GREETING $(command -v node) $(command -v bun)"'])
    expect(inEnv.output).toBe('bonjour /opt/node/bin/node /opt/bun/bin/bun\n')
  })

  it('shows a worker that keeps crashing as crashing, with its lines and the supervisor\'s in app.log', async () => {
    const events: AppEvent[] = []
    const watch = app.watch(SLUG, (e) => events.push(e))
    const dir = await release('dep_crash', 'node', { web: 'node server.js', worker: 'echo "worker: no queue"; exit 1' }, { 'server.js': NODE_SERVER('r3') })
    expect(await app.switchRelease(SLUG, dir, 30)).toMatchObject({ ok: true })
    const status = await until(() => app.status(SLUG), (s) => s?.processes.find((p) => p.name === 'worker')?.state === 'crashing', 15_000)
    expect(status?.processes.find((p) => p.name === 'worker')).toMatchObject({ state: 'crashing', last_exit_code: 1, restarts: expect.any(Number) })
    expect(status!.processes.find((p) => p.name === 'worker')!.restarts).toBeGreaterThanOrEqual(3)
    expect(status?.processes.find((p) => p.name === 'web')?.state).toBe('running')
    const log = await appLog()
    expect(log).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z worker: worker: no queue$/m)
    expect(log).toMatch(/Z berth: worker exited with code 1; restarting in 2 s$/m)
    expect(events).toContainEqual({ event: 'process', name: 'worker', state: 'crashing', restarts: expect.any(Number), last_exit_code: 1 })
    watch.close()
    expect((await get()).body).toMatch(/^r3 bonjour [\d.]+ web$/)
  })

  it('runs a Bun release and a Python release', async () => {
    const bun = await release('dep_bun', 'bun', { web: 'bun run index.ts' }, {
      'index.ts': `Bun.serve({
  port: Number(process.env.PORT),
  fetch: (req, server) => (server.upgrade(req) ? undefined : new Response('bun ' + Bun.version)),
  websocket: { message: (ws, m) => ws.send('echo ' + m) },
})
`,
    })
    expect(await app.switchRelease(SLUG, bun, 30)).toMatchObject({ ok: true })
    expect(await get()).toEqual({ status: 200, body: 'bun 1.4.5' })
    // A websocket through the front.
    const ws = new WebSocket(`ws://${site.address}:8080/socket`)
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.onopen = () => ws.send('hi')
      ws.onmessage = (e) => resolve(String(e.data))
      ws.onerror = () => reject(new Error('the websocket failed'))
    })
    ws.close()
    expect(echoed).toBe('echo hi')
    const py = await release('dep_py', 'python', { web: 'python3 -m http.server "$PORT" --bind 127.0.0.1 --directory site' }, { 'site/index.html': 'python release\n' })
    expect(await app.switchRelease(SLUG, py, 30)).toMatchObject({ ok: true })
    expect(await get()).toEqual({ status: 200, body: 'python release\n' })
  })

  it('installs a dependency from the npm registry with npm ci, as the site user on the read-only root, and serves it', async () => {
    const lock = {
      name: 'withdep', version: '1.0.0', lockfileVersion: 3, requires: true,
      packages: {
        '': { name: 'withdep', version: '1.0.0', dependencies: { ms: '2.1.3' } },
        'node_modules/ms': { version: '2.1.3', resolved: 'https://registry.npmjs.org/ms/-/ms-2.1.3.tgz', integrity: 'sha512-6FlzubTLZG3J2a/NVCAleEhjzq5oxgHyaCU9yYXvcLsvoVaHJq/s5xXI6/XXP6tz7R9xAOtHnSO/tXtF3WRTlA==' },
      },
    }
    const dir = await release('dep_npm', 'node', { web: 'npm start' }, {
      'package.json': JSON.stringify({ name: 'withdep', version: '1.0.0', dependencies: { ms: '2.1.3' }, scripts: { start: 'node server.js' } }),
      'package-lock.json': JSON.stringify(lock),
      'server.js': "require('http').createServer((q, s) => s.end('two days: ' + require('ms')('2 days'))).listen(process.env.PORT)\n",
    })
    const ci = await runtime.exec(SLUG, ['sh', '-c', `cd ${dir} && id -u && npm ci --no-audit --no-fund 2>&1`], { timeoutMs: 180_000 })
    expect(ci.exitCode, ci.output).toBe(0)
    expect(ci.output).toMatch(/^1000\n/)
    expect(ci.output).toContain('added 1 package')
    expect(await app.switchRelease(SLUG, dir, 30)).toMatchObject({ ok: true })
    expect(await get()).toEqual({ status: 200, body: 'two days: 172800000' })
  }, 200_000)

  it('takes a git push into ~/app.git: the pushed tree waits in incoming/, the pusher sees Berth\'s log and result', async () => {
    const seen: AppEvent[] = []
    const watch = app.watch(SLUG, (e) => {
      seen.push(e)
      if (e.event !== 'push') return
      void (async () => {
        const tree = await runtime.exec(SLUG, ['cat', `${e.dir}/hello.txt`])
        await app.pushLog(SLUG, e.id, `building ${e.commit.slice(0, 7)}: ${tree.output}`)
        await app.pushDone(SLUG, e.id, !tree.output.includes('bad'), tree.output.includes('bad') ? 'berth: rejected, the build failed' : 'berth: deployed')
      })()
    })
    await Bun.sleep(500)
    await write({ '/home/site/src/hello.txt': 'good tree\n' })
    const git = 'git -c user.email=t@example.com -c user.name=t'
    const push = (msg: string) => runtime.exec(SLUG, ['sh', '-c', `cd ~/src && ${git} commit -qam '${msg}' && git push -q ~/app.git HEAD:main 2>&1`], { timeoutMs: 30_000 })
    await runtime.exec(SLUG, ['sh', '-c', `cd ~/src && git init -q -b main && git add -A`])
    const ok = await push('first')
    expect(ok.exitCode, ok.output).toBe(0)
    expect(ok.output).toMatch(/building [0-9a-f]{7}: good tree\s*\n[\s\S]*berth: deployed/)
    const event = seen.find((e) => e.event === 'push')
    expect(event).toMatchObject({ event: 'push', id: expect.stringMatching(/^psh_/), ref: 'refs/heads/main', commit: expect.stringMatching(/^[0-9a-f]{40}$/), dir: expect.stringMatching(/^\/home\/site\/app\/incoming\/psh_/) })
    await write({ '/home/site/src/hello.txt': 'bad tree\n' })
    const rejected = await push('second')
    expect(rejected.exitCode).not.toBe(0)
    expect(rejected.output).toContain('berth: rejected, the build failed')
    // The repository kept the first push only.
    const head = await runtime.exec(SLUG, ['git', '--git-dir=/home/site/app.git', 'log', '--format=%s', 'main'])
    expect(head.output).toBe('first\n')
    watch.close()
  }, 60_000)

  it('lets a process that traps SIGTERM finish within its grace on docker stop, then serves the live release again once started and given its settings', async () => {
    const dir = await release('dep_drain', 'node', { web: 'node server.js' }, {
      'server.js': `require('http').createServer((q, s) => s.end('drain ' + process.env.GREETING)).listen(process.env.PORT)
process.on('SIGTERM', () => { console.log('draining'); setTimeout(() => { console.log('drained'); process.exit(0) }, 2000) })
`,
    })
    const switched = await app.switchRelease(SLUG, dir, 30)
    expect(switched).toMatchObject({ ok: true })
    await app.retire(SLUG)
    const started = Date.now()
    await runtime.stopSite(SLUG)
    const took = Date.now() - started
    expect(took).toBeGreaterThanOrEqual(2000)
    expect(took).toBeLessThan(9000)
    site = await runtime.ensureSite(SPEC)
    const log = await appLog()
    expect(log).toMatch(/Z web: draining\n(.*\n)*.*Z web: drained\n/)
    expect(log).toContain('berth: stopping (SIGTERM)')
    // A new container: /tmp is empty, so the release waits for its settings behind a 503.
    const waiting = await until(() => get().catch(() => ({ status: 0, body: '' })), (r) => r.status !== 0, 15_000)
    expect(waiting.status).toBe(503)
    expect(await app.status(SLUG)).toMatchObject({ release: 'dep_drain', env: false, processes: [{ name: 'web', state: 'starting', pid: null }] })
    // The web comes back on the port it had (~/app/.web-port), which Berth's edge connects to.
    expect(await app.pushEnv(SLUG, { GREETING: 'again' })).toMatchObject({ port: switched.ok ? switched.port : -1 })
    expect((await until(() => get(), (r) => r.status === 200)).body).toBe('drain again')
  }, 60_000)

  it('keeps its connections to the web process open under 64 clients at once: the app does not accept a new one per request', async () => {
    await app.pushEnv(SLUG, { GREETING: 'many' })
    const dir = await release('dep_conns', 'node', { web: 'node server.js' }, {
      'server.js': `let accepted = 0
const server = require('http').createServer((q, s) => s.end(String(accepted)))
server.on('connection', () => accepted++)
server.listen(process.env.PORT)
`,
    })
    expect(await app.switchRelease(SLUG, dir, 30)).toMatchObject({ ok: true })
    const before = Number((await get()).body)
    // 64 clients, each with its own kept-alive connection to the front (as the edge holds them).
    const clients = Array.from({ length: 64 }, async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 })
      for (let i = 0; i < 40; i++) {
        await new Promise<void>((done, fail) => httpGet({ host: site.address, port: 8080, path: '/', agent }, (res) => res.resume().on('end', done)).on('error', fail))
      }
      agent.destroy()
    })
    await Promise.all(clients)
    const accepted = Number((await get()).body) - before
    // 2,560 requests: one connection per client, and a few more at most.
    expect(accepted).toBeLessThanOrEqual(80)
  }, 60_000)
})
