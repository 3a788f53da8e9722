import { spawnSync } from 'bun'
import { Database } from 'bun:sqlite'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'
import { tarGz } from './helpers/trees'

/**
 * Backups that hold the data (issue 40 item 3) on the compiled binary, the real engine and the
 * database images: a snapshot holds a dump of each database taken in the same freeze as the
 * home's files; its restore brings rows and files back from that moment (rows and files written
 * after are gone), a database deleted since comes back, one made since is left alone; one
 * database restores alone from an archive; a deleted one comes back without one; the copy off
 * the box (file:// with age, opened by hand) carries the dumps; and kill -9 of Berth during a
 * dump never leaves a ready archive with a partial dump.
 */
const scratch = mkdtempSync(join(tmpdir(), 'berth-dbarch-e2e-'))
const dest = join(scratch, 'dest')
const identityFile = join(scratch, 'id.txt')
let berth: Berth
let site: Site
let other: Site

interface Site { slug: string; key: string }

beforeAll(async () => {
  mkdirSync(dest)
  expect(spawnSync(['age-keygen', '-o', identityFile]).exitCode).toBe(0)
  const recipient = spawnSync(['age-keygen', '-y', identityFile]).stdout.toString().trim()
  // SSH ports of its own: other instances on this engine take the default range's first ones.
  const sshBase = 20_000 + Math.floor(Math.random() * 400) * 100
  berth = await startBerth({ env: { BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}`, BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_OFFSITE_URL: `file://${dest}`, BERTH_OFFSITE_AGE_RECIPIENTS: recipient, BERTH_OFFSITE_STORE_INTERVAL_SECONDS: '3600' } })
  // Its instance id, read now: the teardown's removal needs it after dispose() took the data folder.
  instanceOf(berth)
  ;[site, other] = await Promise.all([buy(), buy()])
  // A static tree moves the site onto berth/app:1, whose Bun carries clients of all three engines.
  const deployed = await call(site, 'POST', 'deploy/', undefined, tarGz({ 'index.html': '<h1>db</h1>' }))
  expect(deployed.status, deployed.text).toBe(200)
  const id = deployed.json.data.id as string
  await until(async () => (await call(site, 'GET', `deployments/${id}/`)).json.data, (d) => d.status === 'succeeded', 240_000, 250, (d) => d.status === 'failed')
  expect((await call(site, 'POST', 'files/write/', { path: 'rows.mjs', content: ROWS })).status).toBe(200)
}, 360_000)
afterAll(async () => {
  // The figures of docs/operations.md "Databases" (In archives): each freeze and the dumps' part of it.
  for (const line of berth?.output().split('\n') ?? []) {
    if (!line.includes('"msg":"archive ready"') && !line.includes('"msg":"archive restored"')) continue
    const l = JSON.parse(line)
    console.log(`${l.msg}: databases ${l.databases} dump_bytes ${l.dump_bytes ?? '-'} frozen_ms ${l.frozen_ms} dump_frozen_ms ${l.dump_frozen_ms ?? l.databases_ms} dump_after_ms ${l.dump_after_ms ?? '-'}`)
  }
  await berth?.dispose()
  await removeInstanceSites(berth)
  rmSync(scratch, { recursive: true, force: true })
}, 90_000)

async function buy(): Promise<Site> {
  const slug = uniqueSlug('dba')
  const { data } = await buyDirect(berth.url, { sku: 'svc_business_monthly', slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  return { slug, key: data.api_key as string }
}

async function call(s: Site, method: string, rest: string, body?: unknown, raw?: Uint8Array, key = s.key) {
  if (!raw) return api(berth.url, method, `/sites/${s.slug}/${rest}`, { key, body })
  const res = await fetch(`${berth.url}/api/v1/sites/${s.slug}/${rest}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/gzip' }, body: Buffer.from(raw) })
  const text = await res.text()
  return { status: res.status, text, json: JSON.parse(text) }
}

async function until<T>(read: () => Promise<T> | T, done: (v: T) => boolean, timeoutMs: number, pollMs = 200, fail: (v: T) => boolean = () => false): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await read()
    if (done(v)) return v
    if (fail(v) || Date.now() > deadline) throw new Error(`still ${JSON.stringify(v)}; Berth said: ${berth.output().split('\n').filter((l) => l.includes('"level":"error"') || l.includes('"level":"warn"')).slice(-5).join('\n')}`)
    await Bun.sleep(pollMs)
  }
}

/**
 * Run in the site's container: `node rows.mjs add VAR text` adds a row (a list item in Redis) to
 * the database of the variable VAR and writes the file `marks/text` (a file with each row);
 * `rows.mjs read VAR...` prints each one's rows; `rows.mjs big VAR n` fills a table of n rows.
 */
const ROWS = `
import { mkdirSync, writeFileSync } from 'node:fs'
const [mode, ...args] = process.argv.slice(2)
const open = (name) => {
  const url = process.env[name]
  if (!url) throw new Error('no ' + name)
  return url.startsWith('redis://') ? { redis: new Bun.RedisClient(url, { connectionTimeout: 5000, autoReconnect: false, maxRetries: 0 }) } : { sql: new Bun.SQL(url, { connectionTimeout: 5, max: 1 }) }
}
const close = async (c) => (c.redis ? c.redis.close() : await c.sql.close())
const out = {}
if (mode === 'add') {
  const [name, text] = args
  const c = open(name)
  if (c.redis) await c.redis.rpush('rows', text)
  else {
    await c.sql\`CREATE TABLE IF NOT EXISTS notes (body VARCHAR(100))\`
    await c.sql\`INSERT INTO notes (body) VALUES (\${text})\`
  }
  await close(c)
  mkdirSync('marks', { recursive: true })
  writeFileSync('marks/' + text, text)
} else if (mode === 'big') {
  const c = open(args[0])
  await c.sql\`CREATE TABLE big AS SELECT g AS n, md5(g::text) || md5((g * 7)::text) AS body FROM generate_series(1, \${Number(args[1])}) g\`
  await close(c)
} else {
  for (const name of args) {
    try {
      const c = open(name)
      if (c.redis) out[name] = await c.redis.lrange('rows', 0, -1)
      else if (mode === 'count') out[name] = Number((await c.sql\`SELECT count(*) AS n FROM big\`)[0].n)
      else out[name] = (await c.sql\`SELECT body FROM notes ORDER BY body\`).map((r) => r.body)
      await close(c)
    } catch (err) {
      out[name] = 'error: ' + err.message
    }
  }
}
console.log(JSON.stringify(out))
`

async function rows(mode: string, ...args: string[]): Promise<Record<string, unknown>> {
  const res = await call(site, 'POST', 'exec/', { command: ['bun', 'rows.mjs', mode, ...args], timeout_seconds: 120 })
  expect(res.status, res.text).toBe(200)
  expect(res.json.data.exit_code, res.json.data.stderr).toBe(0)
  return JSON.parse(res.json.data.stdout.trim().split('\n').pop()!)
}

async function marks(): Promise<string[]> {
  const res = await call(site, 'POST', 'exec/', { command: 'ls marks' })
  return res.json.data.stdout.trim().split('\n').filter(Boolean).sort()
}

/** Rows of the table whose dump Berth is killed during: ~70 MB, a dump of a few seconds here. */
const BIG = 800_000

async function snapshot(): Promise<any> {
  const taken = await call(site, 'POST', 'snapshot/')
  expect(taken.status, taken.text).toBe(200)
  return until(async () => (await call(site, 'GET', `snapshots/${taken.json.data.id}/`)).json.data, (s) => s.status === 'ready', 120_000, 250, (s) => s.status === 'failed')
}

describe('backups that hold the data', () => {
  let first: any
  let second: any

  it("a snapshot's restore brings rows and files back from one moment; a database deleted since comes back, one made since is left", async () => {
    for (const made of await Promise.all([call(site, 'POST', 'databases/', { engine: 'postgres', name: 'main' }), call(site, 'POST', 'databases/', { engine: 'mariadb', name: 'shop' })])) expect(made.status, made.text).toBe(201)
    await rows('add', 'MAIN_URL', 'main_before')
    await rows('add', 'SHOP_URL', 'shop_before')
    // A folder of the reserved name the site makes itself passes for no dump, and stays its own.
    const planted = await call(site, 'POST', 'exec/', { command: 'mkdir -p .berth-databases && echo forged > .berth-databases/main.postgres && echo \'{"format":1,"databases":[{"name":"main","engine":"postgres","file":"main.postgres","bytes":7}]}\' > .berth-databases/manifest.json' })
    expect(planted.json.data.exit_code, planted.text).toBe(0)
    first = await snapshot()
    await rows('add', 'MAIN_URL', 'main_after')
    await rows('add', 'SHOP_URL', 'shop_after')
    expect((await call(site, 'POST', 'databases/', { engine: 'redis', name: 'cache' })).status).toBe(201)
    await rows('add', 'CACHE_URL', 'cache_made_after')
    expect((await call(site, 'DELETE', 'databases/shop/')).json.data.state).toBe('deleted')

    const restore = await call(site, 'POST', `snapshots/${first.id}/restore/`)
    expect(restore.status, restore.text).toBe(200)
    await until(async () => (await call(site, 'GET', `snapshots/${first.id}/`)).json.data, (s) => s.status === 'ready' && s.restored_at !== null, 180_000, 250, (s) => s.error !== null)
    expect(await rows('read', 'MAIN_URL', 'SHOP_URL', 'CACHE_URL')).toEqual({ MAIN_URL: ['main_before'], SHOP_URL: ['shop_before'], CACHE_URL: ['cache_made_after'] })
    expect(await marks()).toEqual(['main_before', 'shop_before'])
    expect((await call(site, 'GET', 'databases/shop/')).json.data.state).toBe('available')
    // The site's own folder of the reserved name is neither archived nor replaced.
    expect((await call(site, 'POST', 'exec/', { command: 'cat .berth-databases/main.postgres' })).json.data.stdout).toBe('forged\n')
  }, 400_000)

  it('one database restores alone from an archive holding it; 422 for one that does not, 404 for another site\'s', async () => {
    await rows('add', 'CACHE_URL', 'cache_before')
    second = await snapshot()
    await rows('add', 'CACHE_URL', 'cache_after')
    await rows('add', 'MAIN_URL', 'main_after2')
    const alone = await call(site, 'POST', 'databases/cache/restore/', { archive_id: second.id })
    expect(alone.status, alone.text).toBe(200)
    expect(alone.json.data).toMatchObject({ name: 'cache', state: 'available' })
    // Only that database: the other keeps what was written since, and the files stay.
    expect(await rows('read', 'CACHE_URL', 'MAIN_URL')).toEqual({ CACHE_URL: ['cache_made_after', 'cache_before'], MAIN_URL: ['main_after2', 'main_before'] })
    expect(await marks()).toContain('cache_after')

    const missing = await call(site, 'POST', 'databases/cache/restore/', { archive_id: first.id })
    expect(missing.status, missing.text).toBe(422)
    expect(missing.json.error).toMatchObject({ param: 'archive_id' })
    expect(missing.json.error.message).toContain('holds no dump')
    const theirs = await call(other, 'POST', 'snapshot/')
    expect(theirs.status, theirs.text).toBe(200)
    const foreign = await call(site, 'POST', 'databases/main/restore/', { archive_id: theirs.json.data.id })
    expect(foreign.status, foreign.text).toBe(404)
    expect(foreign.json.error).toMatchObject({ param: 'archive_id' })
    expect((await call(site, 'POST', 'databases/main/restore/', { archive_id: second.id }, undefined, other.key)).status).toBe(404)
    expect((await call(site, 'POST', 'databases/main/restore/', { archive_id: 'not-an-id' })).json.error).toMatchObject({ param: 'archive_id' })
    expect((await call(site, 'GET', 'logs/?type=audit')).text).toContain(`restore cache from snapshot ${second.id}`)
  }, 200_000)

  it('without a body, a deleted database in its grace comes back as it was, its variable with it', async () => {
    expect((await call(site, 'DELETE', 'databases/main/')).status).toBe(200)
    expect((await rows('read', 'MAIN_URL')).MAIN_URL).toBe('error: no MAIN_URL')
    const back = await call(site, 'POST', 'databases/main/restore/')
    expect(back.status, back.text).toBe(200)
    expect(back.json.data.state).toBe('available')
    expect(await rows('read', 'MAIN_URL')).toEqual({ MAIN_URL: ['main_after2', 'main_before'] })
    // One that is not deleted needs an archive to restore from.
    expect((await call(site, 'POST', 'databases/main/restore/')).status).toBe(409)
  }, 120_000)

  it('the copy off the box carries the dumps and their manifest', async () => {
    const copied = await until(async () => (await call(site, 'GET', `snapshots/${second.id}/`)).json.data, (s) => s.copies.includes('offsite'), 60_000, 500)
    expect(copied.copies).toEqual(['local', 'offsite'])
    const folder = readdirSync(join(dest, 'archives')).find((d) => existsSync(join(dest, 'archives', d, `${second.id}.tar.zst.age`)))!
    const opened = spawnSync(['age', '-d', '-i', identityFile, join(dest, 'archives', folder, `${second.id}.tar.zst.age`)], { stdout: 'pipe' })
    expect(opened.exitCode).toBe(0)
    const tar = spawnSync(['zstd', '-d', '-c'], { stdin: opened.stdout, stdout: 'pipe' }).stdout
    const listing = spawnSync(['tar', '-tf', '-'], { stdin: tar, stdout: 'pipe' }).stdout.toString().split('\n')
    expect(listing).toEqual(expect.arrayContaining(['./.berth-databases/manifest.json', './.berth-databases/main.postgres', './.berth-databases/shop.mariadb', './.berth-databases/cache.redis', './marks/cache_before']))
    const manifest = JSON.parse(spawnSync(['tar', '-xOf', '-', './.berth-databases/manifest.json'], { stdin: tar, stdout: 'pipe' }).stdout.toString())
    expect(manifest.databases.map((d: any) => d.file).sort()).toEqual(['cache.redis', 'main.postgres', 'shop.mariadb'])
    // pg_dump's custom format, opened by pg_restore's magic.
    expect(spawnSync(['tar', '-xOf', '-', './.berth-databases/main.postgres'], { stdin: tar, stdout: 'pipe' }).stdout.subarray(0, 5).toString()).toBe('PGDMP')
  }, 90_000)

  it('kill -9 of Berth during a dump: the archive ends ready or failed, never ready with a partial dump, and a ready one restores whole', async () => {
    await rows('big', 'MAIN_URL', String(BIG))
    const taken = await call(site, 'POST', 'snapshot/')
    expect(taken.status, taken.text).toBe(200)
    const id = taken.json.data.id
    const dump = join(berth.dataDir, 'archives', '.work', `${id}.dumps`, '.berth-databases', 'main.postgres')
    await until(() => (existsSync(dump) ? statSync(dump).size : 0), (n) => n > 1_000_000, 120_000, 5)
    await berth.kill9()
    // Killed mid-dump: the store says creating, never ready, and nothing is stored under its key.
    const store = new Database(join(berth.dataDir, 'berth.db'), { readonly: true })
    const [row] = store.query('SELECT status, site_id AS siteId FROM archives WHERE id = ?').all(id) as Array<{ status: string; siteId: string }>
    store.close()
    expect(row!.status).toBe('creating')
    expect(existsSync(join(berth.dataDir, 'archives', row!.siteId, `${id}.tar.zst`))).toBe(false)
    await berth.restart()
    const settled = await until(async () => (await call(site, 'GET', `snapshots/${id}/`)).json.data, (s) => s.status === 'ready' || s.status === 'failed', 240_000, 500)
    console.log(`the snapshot killed during its dump ended ${settled.status}`)
    const whole = settled.status === 'ready' ? settled : await snapshot()
    await rows('add', 'MAIN_URL', 'after_kill')
    const restored = await call(site, 'POST', 'databases/main/restore/', { archive_id: whole.id })
    expect(restored.status, restored.text).toBe(200)
    expect(await rows('count', 'MAIN_URL')).toEqual({ MAIN_URL: BIG })
    expect((await rows('read', 'MAIN_URL')).MAIN_URL).not.toContain('after_kill')
  }, 600_000)
})
