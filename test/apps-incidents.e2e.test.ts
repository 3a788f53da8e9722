import { spawn } from 'bun'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'
import { tarGz } from './helpers/trees'

/**
 * Incidents on app sites (issue 39), end to end on the compiled binary, the real engine and
 * berth/app:1: a worker in a crash loop; berth serve killed -9 in the middle of a build; the
 * site's container killed behind Berth's back; a snapshot restored over a newer release; a
 * suspension, a scale and a deletion. Two sites: `crash` (starter) for the crash loop, `app`
 * (business: snapshots) for the rest, in order.
 */
let berth: Berth
let crash: Site
let app: Site
let v1: Deployment
/** A snapshot of `app` before it ran any app (its public/ page only). */
let beforeApps: string

interface Site { slug: string; key: string }
interface Deployment { id: string; status: string; output: string; error: string | null }

const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_APPS_HEALTH_TIMEOUT_SECONDS: '20', BERTH_CONTAINERS_RECONCILE_SECONDS: '2' }

beforeAll(async () => {
  berth = await startBerth({ env: ENV })
  ;[crash, app] = await Promise.all([buy('svc_starter_monthly'), buy('svc_business_monthly')])
  instanceOf(berth)
  expect((await siteShell(berth, app.slug, 'echo before any app > public/index.html')).code).toBe(0)
  beforeApps = await snapshotOf(app)
}, 180_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
}, 90_000)

async function buy(sku: string): Promise<Site> {
  const slug = uniqueSlug('inc')
  const { data } = await buyDirect(berth.url, { sku, slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  return { slug, key: data.api_key as string }
}

const call = (site: Site, method: string, rest: string, body?: unknown) => api(berth.url, method, `/sites/${site.slug}/${rest}`, { key: site.key, body })

async function upload(site: Site, files: Record<string, string>): Promise<string> {
  const res = await fetch(`${berth.url}/api/v1/sites/${site.slug}/deploy/`, { method: 'POST', headers: { authorization: `Bearer ${site.key}`, 'content-type': 'application/gzip' }, body: Buffer.from(tarGz(files)) })
  const json = (await res.json()) as { data: { id: string } }
  expect(res.status, JSON.stringify(json)).toBe(200)
  return json.data.id
}

async function eventually<T>(what: string, timeoutMs: number, get: () => Promise<T | undefined | null | false>, spacingMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    last = await get().catch((err: Error) => err.message)
    if (last && typeof last !== 'string') return last as T
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(last)?.slice(0, 500)}`)
    await Bun.sleep(spacingMs)
  }
}

async function finished(site: Site, id: string, timeoutMs = 180_000): Promise<Deployment> {
  return eventually(`deployment ${id} to finish`, timeoutMs, async () => {
    const d = (await call(site, 'GET', `deployments/${id}/`)).json.data as Deployment
    return (d.status === 'succeeded' || d.status === 'failed') && d
  })
}

async function deployed(site: Site, files: Record<string, string>): Promise<Deployment> {
  const d = await finished(site, await upload(site, files))
  expect(d.status, `${d.output}\n${d.error}`).toBe('succeeded')
  return d
}

/** A Node app with nothing to install: its web answers `VERSION GREETING NOTE` (NOTE: ~/data/note.txt). */
const nodeApp = (version: string, o: { worker?: string; build?: string } = {}) => ({
  'berth.json': JSON.stringify({ runtime: 'node', install: null, build: o.build ?? null, processes: { web: 'node server.js', ...(o.worker ? { worker: o.worker } : {}) } }),
  'server.js': `const fs = require('fs')
console.log('web ${version} up, greeting ' + process.env.GREETING)
require('http').createServer((req, res) => {
  let note = ''
  try { note = fs.readFileSync('data/note.txt', 'utf8').trim() } catch {}
  res.end('${version} ' + process.env.GREETING + ' ' + note)
}).listen(process.env.PORT)
`,
})

const page = async (site: Site) => (await viaEdge(berth.url, site.slug, '/')).text
const serving = (site: Site, text: string, timeoutMs = 60_000) => eventually(`${site.slug} to serve ${text}`, timeoutMs, async () => (await page(site)) === text)
const siteView = async (site: Site) => (await call(site, 'GET', '')).json.data

async function containerOf(site: Site) {
  const [c] = await docker.listContainers({ all: true, filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${site.slug}`] } })
  return c
}

async function snapshotOf(site: Site): Promise<string> {
  const snap = await call(site, 'POST', 'snapshot/')
  expect(snap.status, snap.text).toBe(200)
  await eventually('the snapshot', 60_000, async () => (await call(site, 'GET', `snapshots/${snap.json.data.id}/`)).json.data.status === 'ready')
  return snap.json.data.id as string
}

async function restored(site: Site, id: string): Promise<void> {
  const restore = await call(site, 'POST', `snapshots/${id}/restore/`)
  expect(restore.status, restore.text).toBe(200)
  await eventually('the restore', 90_000, async () => {
    const s = (await call(site, 'GET', `snapshots/${id}/`)).json.data
    return s.status === 'ready' && s.restored_at !== null
  })
}

async function berthCli(...args: string[]) {
  const proc = spawn([BINARY, ...args, '--data-dir', berth.dataDir], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_FIREWALL: 'false', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET },
    stdin: 'ignore', stdout: 'pipe', stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, out: stdout + stderr }
}

describe('incidents on an app site', () => {
  it('a worker that exits at once is restarted with back-off, shown crashing in the site view and its warnings, its output and the restarts in type=app logs', async () => {
    const [crashing, first] = await Promise.all([
      deployed(crash, nodeApp('c1', { worker: "node -e \"console.log('worker gives up'); process.exit(2)\"" })),
      deployed(app, nodeApp('v1')),
    ])
    v1 = first
    expect(crashing.status).toBe('succeeded')
    const started = performance.now()
    const view = await eventually('the worker to show crashing', 60_000, async () => {
      const v = await siteView(crash)
      const worker = v.app?.processes?.find((p: { name: string }) => p.name === 'worker')
      return worker?.state === 'crashing' && v
    }, 1000)
    const worker = view.app.processes.find((p: { name: string }) => p.name === 'worker')
    expect(worker).toMatchObject({ state: 'crashing', last_exit_code: 2 })
    expect(worker.restarts).toBeGreaterThanOrEqual(3)
    // Back-off: three exits took at least 1 + 2 s of waiting between them.
    expect(performance.now() - started).toBeGreaterThan(2_000)
    expect(view.app.processes.find((p: { name: string }) => p.name === 'web')).toMatchObject({ state: 'running' })
    expect(view.warnings).toEqual(expect.arrayContaining([expect.objectContaining({ code: 'app_crashing', message: expect.stringContaining('worker') })]))
    expect(await page(crash)).toBe('c1 undefined ')
    const out = await call(crash, 'GET', 'logs/?type=app&process=worker')
    expect(out.status, out.text).toBe(200)
    expect(out.json.data.lines.filter((l: string) => l.endsWith('worker: worker gives up')).length).toBeGreaterThanOrEqual(3)
    const supervisor = (await call(crash, 'GET', 'logs/?type=app&process=berth')).json.data.lines.join('\n')
    expect(supervisor).toMatch(/berth: worker exited with code 2; restarting in 1 s/)
    expect(supervisor).toMatch(/berth: worker exited with code 2; restarting in 2 s/)
  }, 300_000)

  it('berth serve killed -9 in the middle of a build: after its restart the deployment is failed with a reason, the build\'s processes are gone, the live release serves, and a new deploy works', async () => {
    expect(await page(app)).toBe('v1 undefined ')
    const id = await upload(app, nodeApp('v2', { build: 'echo building slowly; sleep 30; echo done' }))
    await eventually('the build to run in the container', 60_000, async () => (await siteShell(berth, app.slug, 'ps -eo args')).output.includes('sleep 30'))
    await Bun.sleep(3_000)
    await berth.kill9()
    await berth.restart()
    const d = await finished(app, id, 60_000)
    expect(d.status).toBe('failed')
    expect(d.error).toMatch(/restarted while this deployment ran/)
    const ps = await siteShell(berth, app.slug, `ps -eo args; test -e ~/app/releases/${id} && echo RELEASE-LEFT; true`)
    expect(ps.output).not.toContain('sleep 30')
    expect(ps.output).not.toContain('RELEASE-LEFT')
    expect(await page(app)).toBe('v1 undefined ')
    expect((await siteView(app)).app).toMatchObject({ runtime: 'node', release: v1.id })
    expect((await call(app, 'PATCH', 'env/', { variables: { GREETING: 'hello' } })).status).toBe(200)
    v1 = await deployed(app, nodeApp('v3'))
    expect(await page(app)).toBe('v3 hello ')
  }, 240_000)

  it('a killed container comes back serving the live release, its settings handed to it again', async () => {
    const c = await containerOf(app)
    const started = performance.now()
    await docker.getContainer(c!.Id).kill()
    await serving(app, 'v3 hello ', 60_000)
    const took = performance.now() - started
    console.log(`apps-incidents: a killed app container served again after ${took.toFixed(0)} ms`)
    // The edge reaches the web process as soon as it listens; the supervisor says `running` once
    // its health check passed (`starting` until then): within seconds.
    const view = await eventually('the view to show web running', 10_000, async () => {
      const shown = (await siteView(app)).app
      return shown.processes?.[0]?.state === 'running' ? shown : null
    })
    expect(view).toMatchObject({ release: v1.id, processes: [expect.objectContaining({ name: 'web', state: 'running' })] })
  }, 120_000)

  it('a snapshot restored over a newer release brings the earlier release back, and ~/data as it was', async () => {
    expect((await siteShell(berth, app.slug, 'mkdir -p ~/data && echo before > ~/data/note.txt')).code).toBe(0)
    expect(await page(app)).toBe('v3 hello before')
    const snap = await snapshotOf(app)
    expect((await siteShell(berth, app.slug, 'echo after > ~/data/note.txt')).code).toBe(0)
    const v4 = await deployed(app, nodeApp('v4'))
    expect(await page(app)).toBe('v4 hello after')
    await restored(app, snap)
    await serving(app, 'v3 hello before', 30_000)
    expect((await siteView(app)).app).toMatchObject({ runtime: 'node', release: v1.id })
    expect(v4.id).not.toBe(v1.id)
    // A snapshot from before the first release: the site stays an app site, serving its public/ as before, no release live.
    await restored(app, beforeApps)
    await serving(app, 'before any app\n', 30_000)
    // Its public/ is served from the container's start; the store learns there is no release as Berth sees that start
    // (the processes shown may be up to 2 s old: AppViews' cache).
    const none = await eventually('the site view to show no release', 10_000, async () => {
      const v = await siteView(app)
      return v.app?.release === null && v.app.processes?.length === 0 && v
    })
    expect(none.app).toMatchObject({ runtime: null, release: null, processes: [] })
    await restored(app, snap)
    await serving(app, 'v3 hello before', 30_000)
    expect((await siteView(app)).app).toMatchObject({ runtime: 'node', release: v1.id })
  }, 240_000)

  it('suspended and resumed, scaled to a bigger plan, then deleted: the app serves after each, with its release, and goes with the site', async () => {
    const suspend = await berthCli('sites', 'suspend', app.slug, '--reason', 'incident drill')
    expect(suspend.code, suspend.out).toBe(0)
    expect((await viaEdge(berth.url, app.slug, '/')).status).toBe(503)
    expect(await containerOf(app)).toMatchObject({ State: expect.not.stringMatching(/running/) })
    const resume = await berthCli('sites', 'resume', app.slug)
    expect(resume.code, resume.out).toBe(0)
    await serving(app, 'v3 hello before', 60_000)

    const scaled = await call(app, 'POST', 'scale/', { new_plan: 'performance' })
    expect(scaled.status, scaled.text).toBe(200)
    await eventually('the scale to apply', 60_000, async () => (await siteView(app)).applying === null)
    await serving(app, 'v3 hello before', 30_000)
    const view = await siteView(app)
    expect(view).toMatchObject({ plan: 'performance', app: { runtime: 'node', release: v1.id } })
    const metrics = await call(app, 'GET', 'metrics/')
    expect(metrics.status, metrics.text).toBe(200)

    const deleted = await call(app, 'DELETE', 'delete/')
    expect(deleted.status, deleted.text).toBe(200)
    expect((await viaEdge(berth.url, app.slug, '/')).status).toBe(404)
    // Past the grace period: the site, its home and the releases in it are removed for good.
    await berth.stop()
    const later = await startBerth({ dataDir: berth.dataDir, port: berth.port, env: { ...ENV, BERTH_DEV_CLOCK_OFFSET_SECONDS: String(8 * 86_400) } })
    try {
      await eventually('the site to be removed', 60_000, async () => (await api(later.url, 'GET', `/sites/${app.slug}/`, { key: app.key })).status === 404 || undefined)
      const volumes = await docker.listVolumes({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${app.slug}`] } })
      expect(volumes.Volumes ?? []).toEqual([])
      expect(await containerOf(app)).toBeUndefined()
    } finally {
      await later.stop()
    }
  }, 300_000)
})
