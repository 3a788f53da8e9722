import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { FakeDatabaseRuntime } from '../../../test/helpers/database-double'
import { inProcess } from '../../../test/helpers/in-process'
import { toolsFromOpenApi } from '../mcp/tools'

/**
 * The databases API (issue 40) in-process: real Requests through the app, a real SQLite file,
 * the real box key, and a fake of the database servers (test/helpers/database-double.ts; the real
 * driver is tested against the engine and by test/databases.e2e.test.ts).
 */
const fake = new FakeDatabaseRuntime()
const h = inProcess({ databaseRuntime: fake })
type Site = { slug: string; key: string; siteId: string }
let shared: Site
let vps: Site
const changed: string[] = []
beforeAll(async () => {
  ;[shared, vps] = await Promise.all([buyInProcess(h, 'svc_starter_monthly', 'dbs'), buyInProcess(h, 'svc_business_monthly', 'dbv')])
  h.services.env.onChanged(async (s) => {
    changed.push(s.slug)
  })
})
afterAll(() => h.close())

const path = (site: Site, rest = '') => `/api/v1/sites/${site.slug}/databases/${rest}`
const call = (site: Site, method: string, rest = '', body?: unknown, key = site.key) => h.call(method, path(site, rest), { key, body })
const URL_FORM = /^postgres:\/\/site:([A-Za-z0-9]{32})@db-main:5432\/main$/

describe('databases', () => {
  let password = ''

  it('create answers 201 once the server answers, with its URL and password; the app gets MAIN_URL and DATABASE_URL', async () => {
    const before = changed.length
    const made = await call(shared, 'POST', '', { engine: 'postgres', name: 'main' })
    expect(made.status, made.text).toBe(201)
    expect(made.json.data).toMatchObject({
      name: 'main', engine: 'postgres', version: '15.10', state: 'available', host: 'db-main', port: 5432, user: 'site', database: 'main',
      memory_mb: 256, disk_gb: 1, error: null, variables: ['MAIN_URL', 'DATABASE_URL'], size_bytes: 7811072,
    })
    password = URL_FORM.exec(made.json.data.url)![1]!
    expect(fake.dbs.get(`${shared.slug}/main`)?.password).toBe(password)
    expect(h.services.env.valuesOf(shared.siteId)).toMatchObject({ MAIN_URL: made.json.data.url, DATABASE_URL: made.json.data.url })
    expect(h.services.env.secretValuesOf(shared.siteId)).toEqual(expect.arrayContaining([made.json.data.url, password]))
    expect(changed.slice(before)).toEqual([shared.slug])
    // Never again in a list, a view or the settings.
    for (const answer of [await call(shared, 'GET'), await call(shared, 'GET', 'main/'), await h.call('GET', `/api/v1/sites/${shared.slug}/env/`, { key: shared.key })]) {
      expect(answer.status, answer.text).toBe(200)
      expect(answer.text).not.toContain(password)
    }
    expect((await call(shared, 'GET')).json.data.map((d: any) => d.name)).toEqual(['main'])
  })

  it("a setting the site sets itself wins over a database's variable", async () => {
    await h.call('PATCH', `/api/v1/sites/${shared.slug}/env/`, { key: shared.key, body: { variables: { DATABASE_URL: 'postgres://app@outside.example/app' } } })
    expect(h.services.env.valuesOf(shared.siteId).DATABASE_URL).toBe('postgres://app@outside.example/app')
    expect((await call(shared, 'GET', 'main/')).json.data.variables).toEqual(['MAIN_URL'])
    await h.call('PATCH', `/api/v1/sites/${shared.slug}/env/`, { key: shared.key, body: { variables: { DATABASE_URL: null } } })
    expect((await call(shared, 'GET', 'main/')).json.data.variables).toEqual(['MAIN_URL', 'DATABASE_URL'])
  })

  it("over the plan's limit, or an engine the plan lacks: 403 naming the limit and the plan", async () => {
    const over = await call(shared, 'POST', '', { engine: 'mariadb', name: 'second' })
    expect(over.status, over.text).toBe(403)
    expect(over.json.error.code).toBe('FORBIDDEN')
    expect(over.json.error.message).toContain('1 of the 1 database the starter plan allows')
    const redis = await call(shared, 'POST', '', { engine: 'redis', name: 'cache' })
    expect(redis.status, redis.text).toBe(403)
    expect(redis.json.error).toMatchObject({ code: 'FORBIDDEN', param: 'engine' })
    expect(redis.json.error.message).toContain('The starter plan does not include redis databases')
  })

  it('reveal answers the same URL and is recorded in the audit trail', async () => {
    const shown = await call(shared, 'POST', 'main/reveal/')
    expect(shown.status, shown.text).toBe(200)
    expect(URL_FORM.exec(shown.json.data.url)![1]).toBe(password)
    const audit = await h.call('GET', `/api/v1/sites/${shared.slug}/logs/?type=audit`, { key: shared.key })
    expect(audit.status, audit.text).toBe(200)
    expect(JSON.stringify(audit.json.data)).toContain('database key=')
    expect(JSON.stringify(audit.json.data)).toContain('cmd: reveal-password main')
    expect(audit.text).not.toContain(password)
  })

  it('rotate-password sets a new password in the server, stores it, restarts the app with it, and is audited', async () => {
    const before = changed.length
    const rotated = await call(shared, 'POST', 'main/rotate-password/')
    expect(rotated.status, rotated.text).toBe(200)
    const next = URL_FORM.exec(rotated.json.data.url)![1]!
    expect(next).not.toBe(password)
    expect(fake.dbs.get(`${shared.slug}/main`)?.password).toBe(next)
    expect(h.services.env.valuesOf(shared.siteId).MAIN_URL).toBe(rotated.json.data.url)
    expect(URL_FORM.exec((await call(shared, 'POST', 'main/reveal/')).json.data.url)![1]).toBe(next)
    expect(changed.slice(before)).toEqual([shared.slug])
    const audit = await h.call('GET', `/api/v1/sites/${shared.slug}/logs/?type=audit`, { key: shared.key })
    expect(JSON.stringify(audit.json.data)).toContain('cmd: rotate-password main')
    password = next
  })

  it('two changes of one database at once: one is done, the other is 409 with Retry-After', async () => {
    fake.delayMs = 50
    try {
      const [a, b] = await Promise.all([call(shared, 'POST', 'main/rotate-password/'), call(shared, 'POST', 'main/rotate-password/')])
      expect([a.status, b.status].sort()).toEqual([200, 409])
      const refused = a.status === 409 ? a : b
      expect(refused.headers.get('retry-after')).toBe('5')
      const done = a.status === 200 ? a : b
      password = URL_FORM.exec(done.json.data.url)![1]!
      expect(fake.dbs.get(`${shared.slug}/main`)?.password).toBe(password)
    } finally {
      fake.delayMs = 0
    }
  })

  it('logs/ answers the newest lines of the server\'s log, searched, the site\'s database passwords masked; 404 for another account and an unknown name', async () => {
    const made = await call(shared, 'GET', 'main/')
    expect(made.status, made.text).toBe(200)
    fake.logLines.set(`${shared.slug}/main`, ['LOG:  starting', `STATEMENT:  ALTER ROLE "site" PASSWORD '${password}'`, 'LOG:  ready to accept connections', 'FATAL:  password authentication failed for user "site"'])
    const newest = await call(shared, 'GET', 'main/logs/?lines=2')
    expect(newest.status, newest.text).toBe(200)
    expect(newest.json.data).toEqual({ name: 'main', lines: ['LOG:  ready to accept connections', 'FATAL:  password authentication failed for user "site"'] })
    const all = await call(shared, 'GET', 'main/logs/')
    expect(all.json.data.lines).toHaveLength(4)
    expect(all.text).not.toContain(password)
    expect(all.json.data.lines[1]).toBe(`STATEMENT:  ALTER ROLE "site" PASSWORD '[secret]'`)
    expect((await call(shared, 'GET', 'main/logs/?search=FATAL')).json.data.lines).toEqual(['FATAL:  password authentication failed for user "site"'])
    const other = await h.register()
    for (const [rest, key] of [['main/logs/', other.key], ['nope/logs/', shared.key]] as const) {
      const missing = await call(shared, 'GET', rest, undefined, key)
      expect([missing.status, missing.json.error.code]).toEqual([404, 'NOT_FOUND'])
    }
    for (const query of ['lines=0', 'lines=501', `search=${'x'.repeat(201)}`]) {
      const bad = await call(shared, 'GET', `main/logs/?${query}`)
      expect([bad.status, bad.json.error.param]).toEqual([422, query.split('=')[0]])
    }
  })

  it('delete removes the server and keeps the data; the name stays taken, the slot is free, the variables go', async () => {
    const gone = await call(shared, 'DELETE', 'main/')
    expect(gone.status, gone.text).toBe(200)
    expect(gone.json.data).toMatchObject({ name: 'main', state: 'deleted', variables: [], size_bytes: null })
    expect(fake.calls.filter((c) => c.op === 'remove' && c.name === 'main' && c.slug === shared.slug)).toEqual([{ op: 'remove', slug: shared.slug, name: 'main', volume: false }])
    expect(h.services.env.valuesOf(shared.siteId)).toEqual({})
    for (const rest of ['main/reveal/', 'main/rotate-password/']) expect((await call(shared, 'POST', rest)).status).toBe(409)
    const again = await call(shared, 'POST', '', { engine: 'postgres', name: 'main' })
    expect(again.status, again.text).toBe(409)
    expect(again.json.error.param).toBe('name')
    const other = await call(shared, 'POST', '', { engine: 'mariadb', name: 'shop' })
    expect(other.status, other.text).toBe(201)
    expect(other.json.data.url).toMatch(/^mysql:\/\/site:[A-Za-z0-9]{32}@db-shop:3306\/shop$/)
    expect(Object.keys(h.services.env.valuesOf(shared.siteId)).sort()).toEqual(['DATABASE_URL', 'SHOP_URL'])
  })

  it("a server that does not start: 503, the row failed with the server's reason, nothing kept; the same call again makes it", async () => {
    fake.failing.set('queue', 'FATAL: could not map anonymous shared memory: Cannot allocate memory')
    const failed = await call(vps, 'POST', '', { engine: 'redis', name: 'queue' })
    expect(failed.status, failed.text).toBe(503)
    expect(failed.json.error.code).toBe('UNAVAILABLE')
    expect(failed.json.error.message).toContain('could not map anonymous shared memory')
    expect((await call(vps, 'GET', 'queue/')).json.data).toMatchObject({ state: 'failed', error: 'FATAL: could not map anonymous shared memory: Cannot allocate memory', variables: [] })
    expect(fake.dbs.has(`${vps.slug}/queue`)).toBe(false)
    expect(h.services.env.valuesOf(vps.siteId)).toEqual({})
    fake.failing.delete('queue')
    const made = await call(vps, 'POST', '', { engine: 'redis', name: 'queue' })
    expect(made.status, made.text).toBe(201)
    expect(made.json.data.url).toMatch(/^redis:\/\/site:[A-Za-z0-9]{32}@db-queue:6379\/0$/)
    expect(made.json.data).toMatchObject({ database: '0', port: 6379, memory_mb: 512, disk_gb: 5 })
    expect((await call(vps, 'DELETE', 'queue/')).status).toBe(200)
  })

  it('a create cut short (Berth stopped mid-way) shows failed, holds no slot, and the same create starts over', async () => {
    const now = Date.now()
    h.services.store.sqlite.query(`INSERT INTO site_databases (id, site_id, name, engine, state, sealed, memory_mb, disk_gb, created_at, updated_at) VALUES (?, ?, 'cut', 'postgres', 'creating', 'x', 512, 5, ?, ?)`)
      .run(crypto.randomUUID(), vps.siteId, now, now)
    fake.dbs.set(`${vps.slug}/cut`, { engine: 'postgres', password: 'old', running: false, volume: true })
    expect((await call(vps, 'GET', 'cut/')).json.data).toMatchObject({ state: 'failed', error: expect.stringContaining('create it again') })
    const made = await call(vps, 'POST', '', { engine: 'postgres', name: 'cut' })
    expect(made.status, made.text).toBe(201)
    expect(fake.calls.filter((c) => c.name === 'cut' && c.op === 'remove')).toEqual([{ op: 'remove', slug: vps.slug, name: 'cut', volume: true }])
    expect(fake.dbs.get(`${vps.slug}/cut`)?.password).toBe(/:([A-Za-z0-9]{32})@/.exec(made.json.data.url)![1])
    expect((await call(vps, 'DELETE', 'cut/')).status).toBe(200)
  })

  it("10 parallel creates on a plan of 3: exactly 3 made, the others 403", async () => {
    fake.delayMs = 50
    try {
      const held = (await call(vps, 'GET')).json.data.filter((d: any) => d.state !== 'deleted' && d.state !== 'failed').length
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => call(vps, 'POST', '', { engine: 'postgres', name: `p${i}` })))
      const statuses = answers.map((a) => a.status).sort()
      expect(statuses.filter((s) => s === 201)).toHaveLength(3 - held)
      expect(statuses.filter((s) => s === 403)).toHaveLength(10 - (3 - held))
      const live = (await call(vps, 'GET')).json.data.filter((d: any) => d.state === 'available')
      expect(live).toHaveLength(3)
    } finally {
      fake.delayMs = 0
    }
  })

  it("another account's site answers 404 on every route, as if it did not exist", async () => {
    const stranger = await buyInProcess(h, 'svc_starter_monthly', 'dbx')
    const routes: [string, string, unknown?][] = [
      ['GET', ''], ['POST', '', { engine: 'postgres', name: 'steal' }], ['GET', 'shop/'], ['DELETE', 'shop/'], ['POST', 'shop/reveal/'], ['POST', 'shop/rotate-password/'],
    ]
    for (const [method, rest, body] of routes) {
      const res = await call(shared, method, rest, body, stranger.key)
      expect(res.status, `${method} ${rest}: ${res.text}`).toBe(404)
      expect(res.text).not.toContain('db-shop')
    }
    expect((await call(shared, 'GET', 'shop/')).json.data.state).toBe('available')
    expect((await call(stranger, 'GET', 'shop/')).status).toBe(404)
  })

  it('hostile input answers 422 naming the field', async () => {
    const bodies: [unknown, string][] = [
      [{ engine: 'postgres', name: 'Main' }, 'name'],
      [{ engine: 'postgres', name: '1main' }, 'name'],
      [{ engine: 'postgres', name: 'a'.repeat(32) }, 'name'],
      [{ engine: 'postgres', name: '' }, 'name'],
      [{ engine: 'postgres', name: 'my-db' }, 'name'],
      [{ engine: 'postgres', name: "x'; DROP TABLE sites;--" }, 'name'],
      [{ engine: 'postgres', name: 'database' }, 'name'],
      [{ engine: 'postgres' }, 'name'],
      [{ engine: 'mongodb', name: 'main2' }, 'engine'],
      [{ engine: 'POSTGRES', name: 'main2' }, 'engine'],
      [{ name: 'main2' }, 'engine'],
      [{ engine: 'postgres', name: 'main2', memory_mb: 99999 }, 'memory_mb'],
    ]
    for (const [body, param] of bodies) {
      const res = await call(vps, 'POST', '', body)
      expect(res.status, `${JSON.stringify(body)}: ${res.text}`).toBe(422)
      expect(res.json.error.param, JSON.stringify(body)).toBe(param)
      expect(res.json.error.message.length).toBeGreaterThan(20)
    }
    expect((await call(vps, 'GET', 'nosuch/')).status).toBe(404)
  })
})

describe('the MCP door', () => {
  it('has a tool for each route', async () => {
    const doc = (await h.call('GET', '/api/v1/openapi.json')).json
    const tools = new Map(toolsFromOpenApi(doc).map((t) => [t.name, t]))
    for (const name of ['create_database', 'list_databases', 'get_database', 'delete_database', 'reveal_database_password', 'rotate_database_password', 'restore_database', 'get_database_logs']) expect(tools.has(name), name).toBe(true)
  })
})

describe("a reaped site's databases", () => {
  it('go with it after its grace period: servers, data and rows, a deleted one too', async () => {
    const gone = await buyInProcess(h, 'svc_business_monthly', 'dbgone')
    for (const name of ['keep', 'dropped']) expect((await call(gone, 'POST', '', { engine: 'postgres', name })).status).toBe(201)
    expect((await call(gone, 'DELETE', 'dropped/')).status).toBe(200)
    expect(fake.dbs.has(`${gone.slug}/dropped`)).toBe(true)
    expect((await h.call('DELETE', `/api/v1/sites/${gone.slug}/delete/`, { key: gone.key })).status).toBe(200)
    h.clock.advance(7 * 24 * 3600_000 + 1000)
    expect((await h.services.reaper.reap()).reaped).toContain(gone.slug)
    expect(fake.calls.filter((c) => c.slug === gone.slug && c.op === 'remove' && c.volume).map((c) => c.name).sort()).toEqual(['dropped', 'keep'])
    expect([...fake.dbs.keys()].filter((k) => k.startsWith(`${gone.slug}/`))).toEqual([])
    expect(h.services.store.sqlite.query('SELECT count(*) AS n FROM site_databases WHERE site_id = ?').get(gone.siteId)).toEqual({ n: 0 })
    // The other sites' are untouched.
    expect((await call(shared, 'GET', 'shop/')).json.data.state).toBe('available')
  })
})

describe('restore of one database (issue 40 item 3; its data from archives: test/databases-archives.e2e.test.ts)', () => {
  it('without a body a deleted one comes back with its variables while the plan has room; the wrong archive or state is refused with its param', async () => {
    const site = await buyInProcess(h, 'svc_starter_monthly', 'dbr')
    const r = (name: string, body?: unknown) => call(site, 'POST', `${name}/restore/`, body)
    expect((await call(site, 'POST', '', { engine: 'postgres', name: 'one' })).status).toBe(201)
    expect((await r('one')).json.error).toMatchObject({ code: 'CONFLICT', param: 'archive_id' })
    expect((await call(site, 'DELETE', 'one/')).json.data.state).toBe('deleted')
    expect(h.services.env.valuesOf(site.siteId).ONE_URL).toBeUndefined()
    expect((await call(site, 'POST', '', { engine: 'postgres', name: 'two' })).status).toBe(201)
    const full = await r('one')
    expect(full.status, full.text).toBe(403)
    expect(full.json.error.message).toContain('1 of the 1 database')
    expect((await call(site, 'DELETE', 'two/')).status).toBe(200)
    const back = await r('one')
    expect(back.status, back.text).toBe(200)
    expect(back.json.data).toMatchObject({ name: 'one', state: 'available', variables: ['ONE_URL', 'DATABASE_URL'] })
    expect(h.services.env.valuesOf(site.siteId).ONE_URL).toMatch(/^postgres:\/\/site:[A-Za-z0-9]{32}@db-one:5432\/one$/)
    const unknownArchive = await r('one', { archive_id: crypto.randomUUID() })
    expect(unknownArchive.status, unknownArchive.text).toBe(404)
    expect(unknownArchive.json.error.param).toBe('archive_id')
    const badId = await r('one', { archive_id: 'x' })
    expect(badId.status).toBe(422)
    expect(badId.json.error.param).toBe('archive_id')
    expect((await r('one', { archive_id: crypto.randomUUID(), extra: 1 })).json.error.param).toBe('extra')
    expect((await r('nosuch')).json.error).toMatchObject({ code: 'NOT_FOUND', param: 'name' })
    expect((await call(site, 'POST', 'one/restore/', undefined, vps.key)).status).toBe(404)
    expect((await h.call('GET', `/api/v1/sites/${site.slug}/logs/?type=audit`, { key: site.key })).text).toContain('restore one')
  })
})
