import { spawn } from 'bun'
import type Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * A site's databases live with it (issue 40 item 4), on the compiled binary and the real engine:
 * suspension stops them (a client on the site's network cannot connect, the API says `stopped`),
 * resumption starts them (the data back, `available` only once they answer); a killed database
 * container comes back with its data and the API never says `available` while it does not answer
 * (the API and a client polled together); a removed one is recreated on its data; a plan change
 * gives them the new plan's memory limit and a downgrade that would not hold them is refused; the
 * site view and /metrics show them; the site's purge leaves nothing of them in the engine.
 *
 * The client is a container of this test on the site's network (berth/php:1 holds psql and
 * redis-cli), as the site's own containers reach the databases, and it works while the site is
 * suspended too.
 */
const RECONCILE_S = 5
const METRICS_TOKEN = 'e2e-dblife-metrics-token-0123456789'
let berth: Berth
let site: { slug: string; key: string }
/** Clients on the site's network: psql in berth/postgres:1, redis-cli in berth/redis:1. */
const clients: Record<'pg' | 'redis', Docker.Container | undefined> = { pg: undefined, redis: undefined }
const urls: Record<string, string> = {}

beforeAll(async () => {
  // SSH ports of its own: other Berths on this machine take the default range's.
  const sshBase = 20_000 + Math.floor(Math.random() * 400) * 100
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_CONTAINERS_RECONCILE_SECONDS: String(RECONCILE_S), BERTH_METRICS_TOKEN: METRICS_TOKEN, BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}` } })
  const slug = uniqueSlug('dbl')
  const { data } = await buyDirect(berth.url, { sku: 'svc_business_monthly', slug })
  site = { slug, key: data.api_key as string }
  expect(await waitForSite(berth.url, site.key, slug)).toBe('active')
  instanceOf(berth)
  const made = await Promise.all([
    call('POST', 'databases/', { engine: 'postgres', name: 'main' }),
    call('POST', 'databases/', { engine: 'redis', name: 'cache' }),
  ])
  for (const res of made) expect(res.status, res.text).toBe(201)
  urls.main = made[0]!.json.data.url
  urls.cache = made[1]!.json.data.url
  const network = Object.keys((await dbContainer('main')).NetworkSettings.Networks)[0]!
  for (const [which, image] of [['pg', 'berth/postgres:1'], ['redis', 'berth/redis:1']] as const) {
    const c = await docker.createContainer({
      Image: image, Entrypoint: ['sleep', 'infinity'], Labels: { 'dev.berth.test': 'databases-life' },
      HostConfig: { NetworkMode: network, AutoRemove: true }, Env: ['PGCONNECT_TIMEOUT=3'],
    })
    await c.start()
    clients[which] = c
  }
  expect(await pg("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('kept'); SELECT body FROM notes")).toEqual({ ok: true, out: 'kept' })
  expect(await redis('SET', 'k', 'kept')).toEqual({ ok: true, out: 'OK' })
}, 300_000)

afterAll(async () => {
  await removeClients()
  await berth?.dispose()
  await removeInstanceSites(berth)
}, 90_000)

function call(method: string, rest: string, body?: unknown) {
  return api(berth.url, method, `/sites/${site.slug}/${rest}`, { key: site.key, body })
}

async function stateOf(name: string): Promise<string> {
  const res = await call('GET', `databases/${name}/`)
  expect(res.status, res.text).toBe(200)
  return res.json.data.state
}

async function waitForState(name: string, state: string, timeoutMs: number): Promise<number> {
  const started = Date.now()
  for (;;) {
    const now = await stateOf(name)
    if (now === state) return Date.now() - started
    if (Date.now() - started > timeoutMs) throw new Error(`database ${name} is ${now}, not ${state}, after ${timeoutMs} ms`)
    await Bun.sleep(200)
  }
}

async function dbContainer(name: string): Promise<Docker.ContainerInspectInfo> {
  const [found] = await docker.listContainers({ all: true, filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${site.slug}`, `dev.berth.database=${name}`] } })
  if (!found) throw new Error(`no container of database ${name}`)
  return docker.getContainer(found.Id).inspect()
}

async function removeClients() {
  for (const c of Object.values(clients)) await c?.remove({ force: true }).catch(() => undefined)
}

/** Runs a command in a client container: whether it exited 0, and what it printed (trimmed). */
async function inClient(client: Docker.Container, cmd: string[]): Promise<{ ok: boolean; out: string }> {
  const exec = await client.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true })
  const stream = await exec.start({})
  const chunks: Buffer[] = []
  stream.on('data', (c: Buffer) => chunks.push(c))
  await new Promise((resolve) => stream.on('end', resolve))
  const raw = Buffer.concat(chunks)
  let out = ''
  for (let i = 0; i + 8 <= raw.length; i += 8 + raw.readUInt32BE(i + 4)) out += raw.subarray(i + 8, i + 8 + raw.readUInt32BE(i + 4)).toString()
  return { ok: (await exec.inspect()).ExitCode === 0, out: out.trim() }
}

const pg = (sql: string) => inClient(clients.pg!, ['psql', urls.main!, '-tAqc', sql])
const redis = (...args: string[]) => inClient(clients.redis!, ['/usr/bin/redis-cli', '-u', urls.cache!, '--no-auth-warning', ...args])

async function berthCli(args: string[]) {
  const proc = spawn([BINARY, ...args, '--data-dir', berth.dataDir], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_FIREWALL: 'false', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET },
    stdin: 'ignore', stdout: 'pipe', stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  expect(code, stdout + stderr).toBe(0)
}

describe("a site's databases live with it", () => {
  it('the site view and /metrics show its databases with their state and size', async () => {
    const view = await call('GET', '')
    expect(view.status, view.text).toBe(200)
    expect(view.json.data.databases).toEqual([
      { name: 'main', engine: 'postgres', state: 'available', size_bytes: expect.any(Number) },
      { name: 'cache', engine: 'redis', state: 'available', size_bytes: expect.any(Number) },
    ])
    expect(view.json.data.databases[0].size_bytes).toBeGreaterThan(1_000_000)
    const metrics = await (await fetch(`${berth.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text()
    expect(metrics).toContain(`berth_database_up{site="${site.slug}",database="main",engine="postgres"} 1\n`)
    expect(metrics).toMatch(new RegExp(`^berth_database_size_bytes\\{site="${site.slug}",database="main",engine="postgres"\\} [1-9]\\d{6,}$`, 'm'))
  })

  it('a killed database container comes back with its data, and the API never says available while it does not answer', async () => {
    const before = await dbContainer('main')
    const killedAt = Date.now()
    await docker.getContainer(before.Id).kill({ signal: 'SIGKILL' })
    // The engine's die event reaches Berth within milliseconds; from then on the API must be true.
    await Bun.sleep(300)
    const samples: { before: string; ok: boolean; after: string }[] = []
    for (;;) {
      const stateBefore = await stateOf('main')
      const probe = await pg('SELECT body FROM notes')
      const stateAfter = await stateOf('main')
      samples.push({ before: stateBefore, ok: probe.ok, after: stateAfter })
      if (probe.ok && stateAfter === 'available') {
        expect(probe.out).toBe('kept')
        break
      }
      if (Date.now() - killedAt > RECONCILE_S * 1000 + 30_000) throw new Error(`not back: ${JSON.stringify(samples.slice(-5))}`)
      await Bun.sleep(200)
    }
    const back = Date.now() - killedAt
    // Said available on both sides of a probe that failed: the API lied.
    expect(samples.filter((s) => s.before === 'available' && s.after === 'available' && !s.ok)).toEqual([])
    expect(samples.some((s) => s.before === 'recovering' || s.after === 'recovering')).toBe(true)
    expect(back).toBeLessThan(RECONCILE_S * 1000 + 20_000)
    console.log(`killed postgres back in ${back} ms (${samples.length} samples)`)
  }, 90_000)

  it('a removed database container (docker rm -f) is made again on its data', async () => {
    const before = await dbContainer('main')
    await docker.getContainer(before.Id).remove({ force: true })
    await Bun.sleep(300)
    expect(await stateOf('main')).toBe('recovering')
    await waitForState('main', 'available', RECONCILE_S * 1000 + 30_000)
    const after = await dbContainer('main')
    expect(after.Id).not.toBe(before.Id)
    expect(after.State.Running).toBe(true)
    expect(await pg('SELECT body FROM notes')).toEqual({ ok: true, out: 'kept' })
  }, 90_000)

  it('suspension stops the databases (stopped, no connection); resumption starts them, available once they answer, data kept', async () => {
    await berthCli(['sites', 'suspend', site.slug, '--reason', 'dblife test'])
    expect(await stateOf('main')).toBe('stopped')
    expect(await stateOf('cache')).toBe('stopped')
    expect((await dbContainer('main')).State.Running).toBe(false)
    expect((await dbContainer('cache')).State.Running).toBe(false)
    expect((await pg('SELECT 1')).ok).toBe(false)
    expect((await redis('PING')).ok).toBe(false)
    // A reconcile pass later they are still stopped: nothing brings them back while the site is suspended.
    await Bun.sleep(RECONCILE_S * 1000 + 2000)
    expect((await dbContainer('main')).State.Running).toBe(false)

    await berthCli(['sites', 'resume', site.slug])
    // The resume answers once the site runs: its databases answer by then.
    expect(await stateOf('main')).toBe('available')
    expect(await stateOf('cache')).toBe('available')
    expect(await pg('SELECT body FROM notes')).toEqual({ ok: true, out: 'kept' })
    expect(await redis('GET', 'k')).toEqual({ ok: true, out: 'kept' })
  }, 120_000)

  it("a plan change gives the databases the new plan's memory (data kept); a downgrade that would not hold them is refused", async () => {
    const refused = await call('POST', 'scale/', { new_plan: 'starter' })
    expect(refused.status, refused.text).toBe(409)
    expect(refused.json.error).toMatchObject({ code: 'CONFLICT', param: 'new_plan' })
    expect(refused.json.error.message).toContain("'cache' (redis)")
    expect((await call('GET', '')).json.data.plan).toBe('business')

    expect((await dbContainer('main')).HostConfig.Memory).toBe(512 * 1024 * 1024)
    const scaled = await call('POST', 'scale/', { new_plan: 'performance' })
    expect(scaled.status, scaled.text).toBe(200)
    for (const deadline = Date.now() + 120_000; (await dbContainer('main').catch(() => null))?.HostConfig.Memory !== 2048 * 1024 * 1024;) {
      if (Date.now() > deadline) throw new Error('the database did not get the new memory limit')
      await Bun.sleep(500)
    }
    // Said available again only once the new container answers.
    await waitForState('main', 'available', 60_000)
    const db = (await call('GET', 'databases/main/')).json.data
    expect(db.memory_mb).toBe(2048)
    expect((await dbContainer('main')).HostConfig.NanoCpus).toBe(2e9)
    expect(await pg('SELECT body FROM notes')).toEqual({ ok: true, out: 'kept' })
  }, 180_000)

  it("Berth's start brings up the databases of active sites: one stopped while it was away answers again, data kept", async () => {
    await berth.stop()
    await docker.getContainer((await dbContainer('main')).Id).stop({ t: 10 })
    await berth.restart()
    const started = Date.now()
    // The store still says available from before: the API must not, while the container is stopped.
    const first = await stateOf('main')
    if (first === 'available') expect((await dbContainer('main')).State.Running).toBe(true)
    await waitForState('main', 'available', 60_000)
    expect((await dbContainer('main')).State.Running).toBe(true)
    expect(await pg('SELECT body FROM notes')).toEqual({ ok: true, out: 'kept' })
    console.log(`database up ${Date.now() - started} ms after Berth answered`)
  }, 120_000)

  it("the site's purge removes its databases' containers, volumes (a deleted one's in its grace too) and rows", async () => {
    const deleted = await call('DELETE', 'databases/cache/')
    expect(deleted.status, deleted.text).toBe(200)
    const filters = { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${site.slug}`, 'dev.berth.role=database'] }
    expect((await docker.listVolumes({ filters })).Volumes?.map((v) => v.Name).sort()).toEqual([expect.stringMatching(/-db-cache$/), expect.stringMatching(/-db-main$/)])
    // Pending deletion: the databases stop with the site.
    expect((await call('DELETE', 'delete/')).status).toBe(200)
    expect(await stateOf('main')).toBe('stopped')
    expect((await dbContainer('main')).State.Running).toBe(false)
    await removeClients()
    await berthCli(['sites', 'delete', site.slug, '--now'])
    expect(await docker.listContainers({ all: true, filters })).toEqual([])
    expect((await docker.listVolumes({ filters })).Volumes ?? []).toEqual([])
    const { Database } = await import('bun:sqlite')
    const db = new Database(`${berth.dataDir}/berth.db`, { readonly: true })
    try {
      expect(db.query('SELECT COUNT(*) AS n FROM site_databases d JOIN sites s ON s.id = d.site_id WHERE s.slug = ?').get(site.slug)).toEqual({ n: 0 })
    } finally {
      db.close()
    }
  }, 120_000)
})
