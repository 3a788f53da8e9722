import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api } from './helpers/binary'
import { buyDirect, waitForSite } from './helpers/purchase'
import { startLab, waitFor, type Lab } from './lab/cluster-lab'
import { leftovers } from './lab/lab-host'
import { APP_IMAGE, joinNode, startControlPlane, type ControlPlane, type JoinedNode } from './lab/berth-cluster'
import { wordpressTarGz } from './helpers/wordpress'
import { WordPressSite } from './helpers/wordpress-site'

/**
 * Databases of sites on cluster nodes (issue 40, docs/cluster.md "Databases on nodes"), on the
 * two-node lab with the compiled control plane, with the WordPress drill of issue 40 item 5: a
 * site on node B runs WordPress (Debian's package files, PHP-FPM on berth/app:1) and gets a
 * MariaDB database `wp` through the API, which runs on B beside it (a container on B's engine, on
 * the site's network); WordPress installs through the control plane's edge and publishes a post;
 * the site's container writes rows with the `mariadb` client and $WP_URL; another site on B cannot
 * reach the database; moved to the control plane and back, the rows and the post are there each
 * time and nothing of the database is left on the node it left; a move that cannot carry it is
 * refused whole; the node lost and evacuated, both come back from the newest archive's dump.
 */
// BERTH_DBNODE_LAB_NAME runs a second copy beside another worktree's (lab names are exclusive on a machine).
const LAB_NAME = process.env.BERTH_DBNODE_LAB_NAME ?? 'clusdb'
const DB_IMAGE = 'berth/mariadb:1'
const WP_ADMIN = { user: 'admin', password: `pw-${Math.random().toString(36).slice(2)}-Ab1!` }
const WP_TITLE = `Carried ${Math.random().toString(36).slice(2, 8)}`
let wp: WordPressSite
let postId = 0
let lab: Lab
let control: ControlPlane
let b: JoinedNode
const figures: Record<string, string> = {}

interface Site { slug: string; key: string }
let site: Site
let other: Site

beforeAll(async () => {
  lab = await startLab(LAB_NAME)
  // berth/app:1 (PHP-FPM, the mariadb client) is built if out of date; the plans' images and MariaDB's are loaded as the machine holds them.
  control = await startControlPlane(lab, { images: [APP_IMAGE], firewall: true })
  await lab.loadImages(['berth/static:1', 'berth/php:1', DB_IMAGE], 'A')
  b = await joinNode(lab, control, 'B')
  ;[site, other] = await Promise.all([buy('dbn', 'svc_business_monthly'), buy('dbo', 'svc_starter_monthly')])
  for (const s of [site, other]) if ((await nodeOf(s.slug)) !== b.id) await move(s, b.id)
  // WordPress's tree, reading its database from WP_URL (made in the first test), moves the site onto berth/app:1.
  const deployed = await call(site, 'POST', 'deploy/', undefined, wordpressTarGz('WP_URL').bytes)
  expect(deployed.status, deployed.text).toBe(200)
  for (const deadline = Date.now() + 240_000; ;) {
    const d = (await call(site, 'GET', `deployments/${deployed.json.data.id}/`)).json.data
    if (d.status === 'succeeded') break
    if (d.status === 'failed' || Date.now() > deadline) throw new Error(`deploy ${d.status}: ${d.output} ${d.error}`)
    await Bun.sleep(250)
  }
  wp = new WordPressSite(control.url, `${site.slug}.localhost:${new URL(control.url).port}`, WP_ADMIN)
}, 480_000)

afterAll(async () => {
  await control?.berth.stop().catch(() => {})
  await lab?.stop()
  console.log(`cluster databases e2e: ${Object.entries(figures).map(([k, v]) => `${k}: ${v}`).join('; ')}`)
  expect(leftovers(LAB_NAME)).toEqual([])
}, 60_000)

async function buy(stem: string, sku: string): Promise<Site> {
  const slug = `${stem}${Math.random().toString(36).slice(2, 6)}`
  const key = (await buyDirect(control.url, { slug, sku })).data.api_key as string
  expect(await waitForSite(control.url, key, slug, 120_000)).toBe('active')
  return { slug, key }
}

async function call(s: Site, method: string, rest: string, body?: unknown, raw?: Uint8Array) {
  if (!raw) return api(control.url, method, `/sites/${s.slug}/${rest}`, { key: s.key, body })
  const res = await fetch(`${control.url}/api/v1/sites/${s.slug}/${rest}`, { method, headers: { authorization: `Bearer ${s.key}`, 'content-type': 'application/gzip' }, body: Buffer.from(raw) })
  const text = await res.text()
  return { status: res.status, text, json: JSON.parse(text) }
}

async function nodeOf(slug: string): Promise<string | undefined> {
  const { json } = await control.cli(['nodes', 'list', '--json'])
  return (json.nodes ?? json).find((n: { sites: string[] }) => n.sites.includes(slug))?.id
}

async function move(s: Site, to: string) {
  const moved = await control.cli(['sites', 'move', s.slug, '--to', to, '--json'], { allowFailure: true })
  expect(moved.code, moved.stdout + moved.stderr).toBe(0)
  expect(await nodeOf(s.slug)).toBe(to)
  const steps = moved.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l).step).filter(Boolean)
  return { ...(moved.json as { unavailable_ms: number; total_ms: number }), steps: steps as { step: string; [k: string]: unknown }[] }
}

/** `statement` run by the `mariadb` client in the site's container on the database $WP_URL names: its rows, tab-separated. */
function sql(statement: string): string {
  return `pw=$(printf %s "$WP_URL" | sed -E 's|^mysql://[^:]*:([^@]*)@.*|\\1|') && MYSQL_PWD="$pw" mariadb -h db-wp -u site wp -N -B -e "${statement}"`
}

/** A shell command in the site's container through the API's exec (the app's own variables). */
async function sh(s: Site, script: string): Promise<{ code: number; out: string; err: string }> {
  const res = await call(s, 'POST', 'exec/', { command: script, timeout_seconds: 120 })
  expect(res.status, res.text).toBe(200)
  return { code: res.json.data.exit_code, out: res.json.data.stdout, err: res.json.data.stderr }
}

/** The site's database containers and volumes on a node's engine (those of database `name` alone when given), by their labels. */
async function databaseOn(node: 'A' | 'B', slug: string, name?: string): Promise<{ containers: string; volumes: string }> {
  const filters = ['--filter', `label=dev.berth.site-slug=${slug}`, '--filter', 'label=dev.berth.role=database', ...(name ? ['--filter', `label=dev.berth.database=${name}`] : [])]
  return { containers: await lab.docker(node, 'ps', '-aq', ...filters), volumes: await lab.docker(node, 'volume', 'ls', '-q', ...filters) }
}

/** BERTH_DBNODE_BENCH_MB=100: the database is filled with that many MB before its move back to B, and its data folder copied by hand beside it (docs/benchmarks.md "Databases"). */
const BENCH_MB = Number(process.env.BERTH_DBNODE_BENCH_MB ?? 0)

/**
 * Fills the database on the control plane with BENCH_MB of rows, then copies its data folder to
 * a scratch volume on B the other way a move could carry it (tar on A's engine into tar on B's,
 * through this process as a move's dump goes through berth serve), and says how long that took.
 */
async function benchVolumeCopy(): Promise<{ bytes: number; ms: number }> {
  const rows = BENCH_MB * 1000
  const filled = await sh(site, `${sql(`CREATE TABLE big AS SELECT seq AS g, REPEAT(MD5(RAND()), 30) AS pad FROM seq_1_to_${rows}`)} && ${sql("SELECT SUM(data_length + index_length) FROM information_schema.tables WHERE table_schema = 'wp'")}`)
  expect(filled.code, filled.err).toBe(0)
  const db = (await databaseOn('A', site.slug, 'wp')).containers.split('\n')[0]!
  const bytes = Number((await lab.docker('A', 'exec', db, 'du', '-sb', '/var/lib/berth-db')).split(/\s+/)[0])
  const started = performance.now()
  const copy = Bun.spawn(['sh', '-c', `docker -H unix://${lab.dockerSocket('A')} exec ${db} tar -C /var/lib/berth-db -cf - . | docker -H unix://${lab.dockerSocket('B')} run --rm -i -v dnbench:/x --entrypoint tar ${DB_IMAGE} -C /x -xf -`], { stderr: 'pipe' })
  expect(await copy.exited, await new Response(copy.stderr).text()).toBe(0)
  const ms = Math.round(performance.now() - started)
  await lab.docker('B', 'volume', 'rm', 'dnbench')
  figures['database size'] = `${filled.out.trim()} bytes (information_schema)`
  return { bytes, ms }
}

/**
 * Gives the site a swarm network as Berth made them before databases ran on nodes (not
 * attachable): with the site suspended (its service at no replica, which Berth then leaves as it
 * is), its service leaves its network, which is made again by hand on the manager without
 * --attachable, the service is put back on it, and the site resumed. Answers the network's name.
 */
async function networkAsBefore(slug: string): Promise<string> {
  const suspended = await control.cli(['sites', 'suspend', slug, '--reason', 'a network as before databases', '--json'], { allowFailure: true })
  expect(suspended.code, suspended.stdout + suspended.stderr).toBe(0)
  const service = (await lab.docker('A', 'service', 'ls', '-q', '--filter', `label=dev.berth.site-slug=${slug}`)).trim()
  const network = (await lab.docker('A', 'service', 'inspect', '-f', '{{.Spec.Name}}', service)).trim()
  await lab.docker('A', 'service', 'update', '--detach', '--network-rm', network, service)
  await waitFor('the site\'s network to be free', 30_000, async () => {
    await lab.docker('A', 'network', 'rm', network)
    return true
  })
  await lab.docker('A', 'network', 'create', '--scope', 'swarm', '--driver', 'bridge', '--config-from', `${network}-config`, network)
  await lab.docker('A', 'service', 'update', '--detach', '--network-add', network, service)
  const resumed = await control.cli(['sites', 'resume', slug, '--json'], { allowFailure: true })
  expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
  expect((await lab.docker('A', 'network', 'inspect', '-f', '{{.Attachable}}', network)).trim()).toBe('false')
  return network
}

describe('databases of sites on cluster nodes', () => {
  it('runs a site\'s database on its node, reachable from the site by WP_URL (WordPress installs on it) and from no other site there', async () => {
    // The site as one made before databases ran on nodes: its network is made again, attachable, by the create.
    const network = await networkAsBefore(site.slug)
    await waitFor('the site to run again on its old network', 60_000, async () => (await call(site, 'POST', 'exec/', { command: 'true' })).status === 200)
    const started = performance.now()
    const made = await call(site, 'POST', 'databases/', { engine: 'mariadb', name: 'wp' })
    expect(made.status, made.text).toBe(201)
    figures['create on B'] = `${Math.round(performance.now() - started)} ms (the image carried to B first, the site's network made again)`
    expect((await lab.docker('A', 'network', 'inspect', '-f', '{{.Attachable}}', network)).trim()).toBe('true')
    expect(made.json.data).toMatchObject({ state: 'available', host: 'db-wp', port: 3306 })
    // On B, beside the site: nothing of it on the control plane.
    expect((await databaseOn('B', site.slug)).containers).not.toBe('')
    expect(await databaseOn('A', site.slug)).toEqual({ containers: '', volumes: '' })
    const wrote = await sh(site, sql("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('written on B'); SELECT count(*) FROM notes"))
    expect(wrote, wrote.err).toMatchObject({ code: 0, out: '1\n' })
    // WordPress, through the control plane's edge, on the database on B.
    const installed = await wp.install('Berth on two nodes')
    expect(installed.text).toContain('Success!')
    const post = await wp.publish(WP_TITLE, 'Kept by MariaDB on whichever node the site runs.')
    expect(post.status, post.text.slice(0, 500)).toBe(201)
    postId = JSON.parse(post.text).id
    // Another site's container on the same node: the name does not resolve, the address does not answer.
    const address = await lab.docker('B', 'inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', (await databaseOn('B', site.slug, 'wp')).containers.split('\n')[0]!)
    expect(address).toMatch(/^\d+\.\d+\.\d+\.\d+$/)
    const reached = await sh(other, `nslookup db-wp >/dev/null 2>&1 && echo resolves || echo unknown; nc -w 3 ${address} 3306 </dev/null && echo open || echo closed`)
    expect(reached.out.trim().split('\n')).toEqual(['unknown', 'closed'])
  }, 240_000)

  it('carries the database with the site to the control plane and back: its rows there each time, nothing left on the node it left', async () => {
    for (const [to, left, there] of [['control', 'B', 'A'], [b.id, 'A', 'B']] as const) {
      const copied = to === b.id && BENCH_MB ? await benchVolumeCopy() : null
      const moved = await move(site, to)
      const carried = moved.steps.find((step) => step.step === 'databases_carried')
      expect(carried).toMatchObject({ databases: 1, node: to })
      figures[`move to ${to}`] = `did not serve for ${moved.unavailable_ms} ms, whole move ${moved.total_ms} ms, database carried in ${carried?.ms} ms (dump ${carried?.bytes} bytes)${copied ? `; by hand, its data folder (${copied.bytes} bytes) copied A to B by tar in ${copied.ms} ms` : ''}`
      const read = await sh(site, sql(`INSERT INTO notes VALUES ('written on ${to}'); SELECT body FROM notes ORDER BY body`))
      expect(read.code, read.err).toBe(0)
      expect(read.out).toContain('written on B\n')
      expect(read.out).toContain(`written on ${to}\n`)
      expect(await databaseOn(left, site.slug)).toEqual({ containers: '', volumes: '' })
      expect((await databaseOn(there, site.slug)).containers).not.toBe('')
      const view = await call(site, 'GET', 'databases/wp/')
      expect(view.json.data).toMatchObject({ state: 'available' })
      expect(await wp.shownWithin(postId, WP_TITLE, 30_000)).toEqual({ page: 200, title: WP_TITLE })
    }
    const rows = await sh(site, sql('SELECT count(*) FROM notes'))
    if (BENCH_MB) expect((await sh(site, sql('SELECT count(*) FROM big'))).out).toBe(`${BENCH_MB * 1000}\n`)
    expect(rows.out).toBe('3\n')
  }, 300_000)

  it('refuses a move whose database cannot be carried: the site back on B with its database, nothing of it left on the target', async () => {
    // A container of another owner holds the database's name on the control plane: its server cannot be made there.
    const name = (await lab.docker('B', 'ps', '--format', '{{.Names}}', '--filter', `label=dev.berth.site-slug=${site.slug}`, '--filter', 'label=dev.berth.role=database', '--filter', 'label=dev.berth.database=wp')).trim()
    expect(name).toMatch(/-db-wp$/)
    await lab.docker('A', 'create', '--name', name, '--entrypoint', 'true', DB_IMAGE)
    try {
      const moved = await control.cli(['sites', 'move', site.slug, '--to', 'control', '--json'], { allowFailure: true })
      expect(moved.code).not.toBe(0)
      expect(moved.stderr).toMatch(/its database 'wp' could not be carried to control: .*It was put back on/s)
      expect(await nodeOf(site.slug)).toBe(b.id)
      expect(await databaseOn('A', site.slug)).toEqual({ containers: '', volumes: '' })
    } finally {
      await lab.docker('A', 'rm', '-f', name)
    }
    const rows = await sh(site, sql("INSERT INTO notes VALUES ('written after the last archive'); SELECT count(*) FROM notes"))
    expect(rows, rows.err).toMatchObject({ code: 0, out: '4\n' })
  }, 120_000)

  it('brings the database of a lost node\'s site back from its newest archive\'s dump when the node is evacuated', async () => {
    // The newest archive is the refused move's: the row written after it is not in it.
    await lab.powerOff('B')
    await waitFor('B down', 30_000, async () => {
      const { json } = await control.cli(['nodes', 'list', '--json'])
      return (json.nodes ?? json).find((n: { id: string }) => n.id === b.id)?.state === 'down'
    })
    const evacuated = await control.cli(['nodes', 'evacuate', b.id, '--json'], { allowFailure: true })
    expect(evacuated.code, evacuated.stdout + evacuated.stderr).toBe(0)
    expect((evacuated.json.sites ?? evacuated.json).find((s: { slug: string }) => s.slug === site.slug)).toMatchObject({ node: 'control', result: 'restored' })
    const rows = await sh(site, sql('SELECT body FROM notes ORDER BY body'))
    expect(rows, rows.err).toMatchObject({ code: 0, out: `written on B\nwritten on control\nwritten on ${b.id}\n` })
    expect((await databaseOn('A', site.slug)).containers).not.toBe('')
    expect((await call(site, 'GET', 'databases/wp/')).json.data).toMatchObject({ state: 'available' })
    expect(await wp.shownWithin(postId, WP_TITLE, 30_000)).toEqual({ page: 200, title: WP_TITLE })
  }, 180_000)
})
