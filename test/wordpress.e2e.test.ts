import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites } from './helpers/sites'
import { wordpressTarGz } from './helpers/wordpress'
import { WordPressSite } from './helpers/wordpress-site'

/**
 * The WordPress drill of issue 40 (item 5) on the compiled binary: WordPress from Debian's
 * `wordpress` package files (test/helpers/wordpress.ts) deployed as a tree to a vps site (PHP-FPM
 * on the app image), on a MariaDB database created through the API; its wp-config.php reads the
 * database from MAIN_URL, the variable Berth gives the site for it. WordPress installs through its
 * own installer over HTTP through Berth's edge, the admin logs in through wp-login.php and writes a
 * post through the REST API (with the nonce wp-admin's scripts use), and the post survives the
 * database container being killed (Berth's reconcile brings it back) and a snapshot's restore (its
 * dump of the database; a post written after it is gone). Its move to another node and back:
 * test/cluster-databases.e2e.test.ts.
 */
let berth: Berth
let site: { slug: string; key: string }
let wp: WordPressSite
const ADMIN = { user: 'admin', password: `pw-${Math.random().toString(36).slice(2)}-Ab1!` }
const TITLE = `Survivor ${Math.random().toString(36).slice(2, 8)}`
let postId = 0

beforeAll(async () => {
  berth = await startBerth()
  const slug = uniqueSlug('wp')
  const { data } = await buyDirect(berth.url, { sku: 'svc_business_monthly', slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  site = { slug, key: data.api_key as string }
  wp = new WordPressSite(berth.url, `${slug}.localhost:${berth.port}`, ADMIN)
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
}, 90_000)

async function call(method: string, rest: string, body?: unknown) {
  return api(berth.url, method, `/sites/${site.slug}/${rest}`, { key: site.key, body })
}

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs: number, fail: (v: T) => boolean = () => false): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await read()
    if (done(v)) return v
    if (fail(v) || Date.now() > deadline) throw new Error(`still ${JSON.stringify(v)}`)
    await Bun.sleep(500)
  }
}

async function databaseContainer(): Promise<string> {
  const [c] = await docker.listContainers({ all: true, filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, 'dev.berth.role=database', `dev.berth.site-slug=${site.slug}`, 'dev.berth.database=main'] } })
  if (!c) throw new Error(`no database container for ${site.slug}`)
  return c.Id
}

describe('WordPress on a MariaDB database made by Berth (issue 40, item 5)', () => {
  it('a vps site gets a MariaDB database through the API and WordPress, from Debian\'s package files, as a deployed tree', async () => {
    const db = await call('POST', 'databases/', { engine: 'mariadb', name: 'main' })
    expect(db.status, db.text).toBe(201)
    expect(db.json.data).toMatchObject({ engine: 'mariadb', state: 'available', host: 'db-main', port: 3306 })
    const tree = wordpressTarGz('MAIN_URL')
    expect(tree.files).toBeGreaterThan(2000)
    const res = await fetch(`${berth.url}/api/v1/sites/${site.slug}/deploy/`, { method: 'POST', headers: { authorization: `Bearer ${site.key}`, 'content-type': 'application/gzip' }, body: Buffer.from(tree.bytes) })
    const queued = (await res.json()) as any
    expect(res.status, JSON.stringify(queued)).toBe(200)
    for (const deadline = Date.now() + 300_000; ;) {
      const d = (await call('GET', `deployments/${queued.data.id}/`)).json.data
      if (d.status === 'succeeded') {
        expect(d.output).toMatch(/php/i)
        break
      }
      if (d.status === 'failed' || Date.now() > deadline) throw new Error(`deploy ${d.status}: ${d.error}\n${d.output}`)
      await Bun.sleep(500)
    }
    // PHP has the database's variable (wp-config.php answers 500 naming it when it has not):
    // WordPress finds the empty database and offers its installer.
    const root = await wp.page('/')
    expect(root.status, root.text.slice(0, 500)).toBe(302)
    expect(root.headers.get('location')).toContain('/wp-admin/install.php')
    const installer = await wp.page('/wp-admin/install.php')
    expect(installer.status).toBe(200)
    expect(installer.text).toContain('name="weblog_title"')
  }, 420_000)

  it('installs through its own installer over HTTP through the edge', async () => {
    const done = await wp.install('Berth drill')
    expect(done.status, done.text.slice(0, 2000)).toBe(200)
    expect(done.text).toContain('Success!')
    const home = await wp.page('/')
    expect(home.status).toBe(200)
    expect(home.text).toContain('Berth drill')
  }, 120_000)

  it('a post written through the REST API, logged in through wp-login.php, is shown on its page and by the REST API', async () => {
    // The REST API's nonce for a logged-in user, as wp-admin's own scripts fetch it.
    const wrote = await wp.publish(TITLE, 'Written through the REST API; kept by MariaDB.')
    expect(wrote.status, wrote.text.slice(0, 1000)).toBe(201)
    postId = JSON.parse(wrote.text).id
    expect(postId).toBeGreaterThan(0)
    expect(await wp.shown(postId, TITLE)).toEqual({ page: 200, title: TITLE })
  }, 60_000)

  it('the post survives `docker kill` of the database container: Berth brings it back, WordPress shows the post again', async () => {
    const id = await databaseContainer()
    const startedBefore = (await docker.getContainer(id).inspect()).State.StartedAt
    await docker.getContainer(id).kill()
    // Until Berth's reconcile has it answering again, WordPress says so (its own error page).
    const down = await wp.page(`/?p=${postId}`)
    if (down.status !== 200) expect(down.text).toContain('Error establishing a database connection')
    expect(await wp.shownWithin(postId, TITLE, 90_000)).toEqual({ page: 200, title: TITLE })
    // Brought back by Berth, nobody else: the same container, started again.
    const after = (await docker.getContainer(id).inspect()).State
    expect(after.Running).toBe(true)
    expect(after.StartedAt).not.toBe(startedBefore)
    // The view says so too, within a moment of its answering again (Berth's own check polls it).
    const state = await until(async () => (await call('GET', 'databases/main/')).json.data.state, (s) => s === 'available', 10_000)
    expect(state).toBe('available')
  }, 150_000)

  it('the post survives a snapshot and its restore; a post written after the snapshot is gone', async () => {
    const taken = await call('POST', 'snapshot/')
    expect(taken.status, taken.text).toBe(200)
    const snap = await until(async () => (await call('GET', `snapshots/${taken.json.data.id}/`)).json.data, (s) => s.status === 'ready', 180_000, (s) => s.status === 'failed')
    const later = await wp.publish('Written after the snapshot', 'Gone after the restore.')
    expect(later.status, later.text.slice(0, 500)).toBe(201)
    const laterId = JSON.parse(later.text).id
    const restore = await call('POST', `snapshots/${snap.id}/restore/`)
    expect(restore.status, restore.text).toBe(200)
    await until(async () => (await call('GET', `snapshots/${snap.id}/`)).json.data, (s) => s.status === 'ready' && s.restored_at !== null, 240_000, (s) => s.error !== null)
    expect(await wp.shownWithin(postId, TITLE, 60_000)).toEqual({ page: 200, title: TITLE })
    expect((await wp.page(`/?rest_route=/wp/v2/posts/${laterId}`)).status).toBe(404)
  }, 480_000)

})
