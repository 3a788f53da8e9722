import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites } from './helpers/sites'
import { tarGz } from './helpers/trees'

/**
 * Databases end to end (issue 40): the compiled binary, the real engine, the database images
 * (berth/postgres:1, berth/mariadb:1, berth/redis:1) and a site on berth/app:1. Each engine is
 * created through the API; the site's own container connects to it with the URL from its
 * variables (exec, Bun's own PostgreSQL, MySQL and Redis clients), writes and reads; a rotation
 * of the password makes the old URL fail and the new one work with the data kept; another site
 * cannot even resolve the host; another account gets 404.
 */
let berth: Berth
let site: Site
let other: Site

interface Site { slug: string; key: string }

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  ;[site, other] = await Promise.all([buy('svc_business_monthly'), buy('svc_starter_monthly')])
  instanceOf(berth)
  // A static tree moves the site onto berth/app:1, whose Bun carries clients of all three engines.
  const deployed = await call(site, 'POST', 'deploy/', undefined, tarGz({ 'index.html': '<h1>db</h1>' }))
  expect(deployed.status, deployed.text).toBe(200)
  const id = deployed.json.data.id as string
  for (const deadline = Date.now() + 240_000; ;) {
    const d = (await call(site, 'GET', `deployments/${id}/`)).json.data
    if (d.status === 'succeeded') break
    if (d.status === 'failed' || Date.now() > deadline) throw new Error(`deploy ${d.status}: ${d.output} ${d.error}`)
    await Bun.sleep(250)
  }
  const script = await call(site, 'POST', 'files/write/', { path: 'dbcheck.mjs', content: CHECK })
  expect(script.status, script.text).toBe(200)
}, 360_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
}, 90_000)

async function buy(sku: string): Promise<Site> {
  const slug = uniqueSlug('db')
  const { data } = await buyDirect(berth.url, { sku, slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  return { slug, key: data.api_key as string }
}

async function call(s: Site, method: string, rest: string, body?: unknown, raw?: Uint8Array, key = s.key) {
  if (!raw) return api(berth.url, method, `/sites/${s.slug}/${rest}`, { key, body })
  const res = await fetch(`${berth.url}/api/v1/sites/${s.slug}/${rest}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/gzip' }, body: Buffer.from(raw) })
  const text = await res.text()
  return { status: res.status, text, json: JSON.parse(text) }
}

/**
 * Run in the site's container by exec: for each variable named, connects with the URL it holds,
 * writes a row (a key in Redis) and reads everything back; prints one JSON line of the results,
 * or of the error each connection met.
 */
const CHECK = `
const [mode, ...names] = process.argv.slice(2)
const out = {}
for (const name of names) {
  const url = process.env[name]
  try {
    if (!url) throw new Error('no ' + name)
    if (url.startsWith('redis://')) {
      const r = new Bun.RedisClient(url, { connectionTimeout: 5000, autoReconnect: false, maxRetries: 0 })
      if (mode === 'write') await r.rpush('notes', 'hello ' + name)
      out[name] = await r.lrange('notes', 0, -1)
      r.close()
    } else {
      const sql = new Bun.SQL(url, { connectionTimeout: 5, max: 1 })
      if (mode === 'write') {
        await sql\`CREATE TABLE IF NOT EXISTS notes (body VARCHAR(100))\`
        await sql\`INSERT INTO notes (body) VALUES (\${'hello ' + name})\`
      }
      out[name] = (await sql\`SELECT body FROM notes\`).map((r) => r.body)
      await sql.close()
    }
  } catch (err) {
    out[name] = 'error: ' + (err.code ?? '') + ' ' + err.message
  }
}
console.log(JSON.stringify(out))
`

async function check(s: Site, mode: 'write' | 'read', names: string[], env?: Record<string, string>): Promise<Record<string, unknown>> {
  const res = await call(s, 'POST', 'exec/', { command: ['bun', 'dbcheck.mjs', mode, ...names], ...(env ? { env } : {}), timeout_seconds: 60 })
  expect(res.status, res.text).toBe(200)
  expect(res.json.data.exit_code, res.json.data.stderr).toBe(0)
  return JSON.parse(res.json.data.stdout.trim().split('\n').pop()!)
}

describe('databases on the compiled binary', () => {
  const urls: Record<string, string> = {}

  it('creates one database of each engine through the API, each answering with its URL once its server answers', async () => {
    const made = await Promise.all([
      call(site, 'POST', 'databases/', { engine: 'postgres', name: 'main' }),
      call(site, 'POST', 'databases/', { engine: 'mariadb', name: 'shop' }),
      call(site, 'POST', 'databases/', { engine: 'redis', name: 'cache' }),
    ])
    for (const res of made) expect(res.status, res.text).toBe(201)
    const [pg, maria, redis] = made.map((r) => r.json.data)
    expect(pg).toMatchObject({ engine: 'postgres', state: 'available', host: 'db-main', port: 5432, user: 'site', database: 'main' })
    expect(pg.version).toMatch(/^15\./)
    expect(maria).toMatchObject({ engine: 'mariadb', state: 'available', host: 'db-shop', port: 3306 })
    expect(maria.version).toMatch(/^10\.11\./)
    expect(redis).toMatchObject({ engine: 'redis', state: 'available', host: 'db-cache', port: 6379, database: '0' })
    expect(redis.version).toMatch(/^7\.0\./)
    urls.MAIN_URL = pg.url
    urls.SHOP_URL = maria.url
    urls.CACHE_URL = redis.url
    const list = await call(site, 'GET', 'databases/')
    expect(list.json.data.map((d: any) => [d.name, d.state])).toEqual(expect.arrayContaining([['main', 'available'], ['shop', 'available'], ['cache', 'available']]))
    for (const url of Object.values(urls)) expect(list.text).not.toContain(url.split('@')[0]!.split(':')[2])
  }, 300_000)

  it("the site's container connects with the URLs from its variables, writes and reads", async () => {
    const wrote = await check(site, 'write', ['MAIN_URL', 'SHOP_URL', 'CACHE_URL', 'DATABASE_URL'])
    expect(wrote).toEqual({
      MAIN_URL: ['hello MAIN_URL'],
      SHOP_URL: ['hello SHOP_URL'],
      CACHE_URL: ['hello CACHE_URL'],
      DATABASE_URL: expect.anything(),
    })
    // DATABASE_URL is the oldest database's: the same server as its {NAME}_URL, holding both rows.
    const first = (await call(site, 'GET', 'databases/')).json.data.find((d: any) => d.variables.includes('DATABASE_URL'))
    const own = `${first.name.toUpperCase()}_URL`
    expect(wrote.DATABASE_URL).toEqual([`hello ${own}`, 'hello DATABASE_URL'])
    const read = await check(site, 'read', ['MAIN_URL', 'SHOP_URL', 'CACHE_URL'])
    expect(read.MAIN_URL).toEqual(expect.arrayContaining(['hello MAIN_URL']))
    expect(read.SHOP_URL).toEqual(expect.arrayContaining(['hello SHOP_URL']))
    expect(read.CACHE_URL).toEqual(expect.arrayContaining(['hello CACHE_URL']))
  }, 120_000)

  it('rotate-password: the old URL stops working, the new one reads the same data, the app gets it', async () => {
    const rotated = await call(site, 'POST', 'databases/main/rotate-password/')
    expect(rotated.status, rotated.text).toBe(200)
    expect(rotated.json.data.url).not.toBe(urls.MAIN_URL)
    const old = await check(site, 'read', ['OLD_URL'], { OLD_URL: urls.MAIN_URL! })
    expect(String(old.OLD_URL)).toMatch(/^error:/)
    const now = await check(site, 'read', ['MAIN_URL'])
    expect(now.MAIN_URL).toEqual(expect.arrayContaining(['hello MAIN_URL']))
    const audit = await call(site, 'GET', 'logs/?type=audit')
    expect(audit.text).toContain('rotate-password main')
    // The refused login with the old password is in the server's own log, as the agent reads it.
    const logged = await call(site, 'GET', 'databases/main/logs/?search=password%20authentication%20failed')
    expect(logged.status, logged.text).toBe(200)
    expect(logged.json.data.lines.at(-1)).toMatch(/FATAL: +password authentication failed for user "site"/)
    const whole = await call(site, 'GET', 'databases/main/logs/?lines=500')
    expect(whole.json.data.lines.some((line: string) => /ready to accept connections/.test(line))).toBe(true)
    for (const url of [urls.MAIN_URL!, rotated.json.data.url]) expect(whole.text).not.toContain(new URL(url).password)
  }, 120_000)

  it("another site's container cannot reach them; another account gets 404 on every route", async () => {
    // Not on its network: the names do not resolve there, while its own database's does.
    const own = await call(other, 'POST', 'databases/', { engine: 'postgres', name: 'own' })
    expect(own.status, own.text).toBe(201)
    const tried = await call(other, 'POST', 'exec/', { command: 'for h in db-own db-main db-shop db-cache; do nslookup $h >/dev/null 2>&1 && echo "$h resolves" || echo "$h unknown"; done' })
    expect(tried.status, tried.text).toBe(200)
    expect(tried.json.data.stdout, JSON.stringify(tried.json.data)).toBe('db-own resolves\ndb-main unknown\ndb-shop unknown\ndb-cache unknown\n')
    // And nothing is published on the host.
    const containers = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, 'dev.berth.role=database'] } })
    expect(containers.length).toBeGreaterThanOrEqual(3)
    for (const c of containers) expect(c.Ports.filter((p) => p.PublicPort !== undefined), c.Names.join()).toEqual([])
    for (const [method, rest, body] of [['GET', 'databases/'], ['GET', 'databases/main/'], ['POST', 'databases/', { engine: 'postgres', name: 'x' }], ['DELETE', 'databases/main/'], ['POST', 'databases/main/reveal/'], ['POST', 'databases/main/rotate-password/']] as const) {
      const res = await call(site, method, rest, body, undefined, other.key)
      expect(res.status, `${method} ${rest}: ${res.text}`).toBe(404)
    }
  }, 60_000)

  it('delete removes the server: its URL goes from the variables, the name stays taken', async () => {
    const gone = await call(site, 'DELETE', 'databases/cache/')
    expect(gone.status, gone.text).toBe(200)
    expect(gone.json.data.state).toBe('deleted')
    const after = await check(site, 'read', ['CACHE_URL'])
    expect(after.CACHE_URL).toBe('error:  no CACHE_URL')
    expect((await call(site, 'POST', 'databases/', { engine: 'redis', name: 'cache' })).status).toBe(409)
  }, 60_000)
})
