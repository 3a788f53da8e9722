import { Database } from 'bun:sqlite'
import { spawn } from 'bun'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * berth sites list|show|suspend|resume|delete and berth accounts list|show|suspend|resume, run as
 * the compiled binary beside a running `berth serve` on the same data folder and real Docker, as a
 * hoster would over SSH: each change is seen through the edge (the suspended page, the site's own
 * bytes again), the API (the suspension's reason, the account's keys refused) and the engine (the
 * container stopped).
 */
let berth: Berth
let shop: { slug: string; key: string }
let unpaid: { slug: string; key: string }

beforeAll(async () => {
  berth = await startBerth()
  instanceOf(berth)
  ;[shop, unpaid] = await Promise.all([buy('admin-shop'), buy('admin-unpaid')])
}, 120_000)
afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
})

async function buy(stem: string) {
  const slug = uniqueSlug(stem)
  const { data } = await buyDirect(berth.url, { sku: 'svc_starter_monthly', slug })
  expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
  await eventually(() => viaEdge(berth.url, slug), (r) => r.status === 200, `${slug} serving`)
  return { slug, key: data.api_key as string }
}

/** Runs `berth ARGS --data-dir DIR` as the admin would; its exit code and output. */
async function berthCli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string; json: any }> {
  const proc = spawn([BINARY, ...args, '--data-dir', berth.dataDir], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_FIREWALL: 'false', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET },
    stdin: 'ignore', stdout: 'pipe', stderr: 'pipe',
  })
  const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  let json: any
  try {
    json = JSON.parse(stdout)
  } catch {
    json = undefined
  }
  return { code, stdout, stderr, json }
}

async function eventually<T>(get: () => Promise<T>, done: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await get()
    if (done(v)) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v).slice(0, 300)}`)
    await Bun.sleep(50)
  }
}

/** Whether the site's container runs, asked of the engine. */
async function running(slug: string): Promise<boolean> {
  const [c] = await docker.listContainers({ all: true, filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${slug}`] } })
  return c?.State === 'running'
}

describe('berth sites', () => {
  it('list --json and show name the site with its account, plan and status', async () => {
    const list = await berthCli('sites', 'list', '--json')
    expect(list.code, list.stderr).toBe(0)
    const row = list.json.find((s: { slug: string }) => s.slug === shop.slug)
    expect(row).toMatchObject({ slug: shop.slug, status: 'active', plan: 'starter', hosting_type: 'shared', suspension: null, account: { status: 'active' }, subscription_status: 'active' })
    const table = await berthCli('sites', 'list')
    expect(table.stdout).toMatch(/^SLUG\s+STATUS\s+PLAN\s+TYPE\s+ACCOUNT\s+SSH\s+CREATED\s+NOTE$/m)
    expect(table.stdout).toMatch(new RegExp(`^${shop.slug}\\s+active\\s+starter\\s+shared\\s+${row.account.id}\\s+-\\s+\\d{4}-`, 'm'))
    const show = await berthCli('sites', 'show', shop.slug)
    expect(show.code).toBe(0)
    expect(show.stdout).toMatch(/^status:\s+active$/m)
  })

  it('suspend --reason: at once the edge answers the page an unpaid site gets, the API shows the reason, the container is stopped; resume serves it again', async () => {
    // The other site as billing leaves it after 7 days unpaid (its lapse, written from outside
    // while berth serve is stopped: only berth serve writes while it runs, and reads it at start).
    await berth.stop()
    const db = new Database(join(berth.dataDir, 'berth.db'))
    db.run("UPDATE sites SET status = 'suspended', suspended_by = 'billing', suspended_reason = 'unpaid' WHERE slug = ?", [unpaid.slug])
    db.close()
    await berth.restart()
    await eventually(() => viaEdge(berth.url, shop.slug), (r) => r.status === 200, `${shop.slug} serving again`)
    const unpaidPage = await eventually(() => viaEdge(berth.url, unpaid.slug), (r) => r.status === 503, 'the unpaid page')

    const suspend = await berthCli('sites', 'suspend', shop.slug, '--reason', 'phishing page reported by abuse@bank.example')
    expect(suspend.code, suspend.stderr).toBe(0)
    expect(suspend.stdout).toContain(`Suspended ${shop.slug}`)
    const ended = Date.now()
    const page = await eventually(() => viaEdge(berth.url, shop.slug), (r) => r.status === 503, 'the suspended page', 5_000)
    // Within a moment of the command's end (berth serve did it: its edge knows at once).
    expect(Date.now() - ended).toBeLessThan(1_500)
    expect(page.text).toBe(unpaidPage.text)
    expect(page.text).toContain('This site is suspended')
    expect(await running(shop.slug)).toBe(false)
    const site = await api(berth.url, 'GET', `/sites/${shop.slug}/`, { key: shop.key })
    expect(site.json.data).toMatchObject({ status: 'suspended', suspension: { by: 'admin', reason: 'phishing page reported by abuse@bank.example' } })
    const shown = await berthCli('sites', 'show', shop.slug, '--json')
    expect(shown.json).toMatchObject({ status: 'suspended', suspension: { by: 'admin', reason: 'phishing page reported by abuse@bank.example' } })

    const resume = await berthCli('sites', 'resume', shop.slug)
    expect(resume.code, resume.stderr).toBe(0)
    expect(resume.stdout).toContain(`Resumed ${shop.slug}`)
    const back = await eventually(() => viaEdge(berth.url, shop.slug), (r) => r.status === 200, 'the site again', 10_000)
    expect(back.text).not.toContain('This site is suspended')
    expect(await running(shop.slug)).toBe(true)
    expect((await api(berth.url, 'GET', `/sites/${shop.slug}/`, { key: shop.key })).json.data).toMatchObject({ status: 'active', suspension: null })
  })

  it("refuses to resume billing's suspension, and says unknown slugs and missing reasons plainly", async () => {
    const billing = await berthCli('sites', 'resume', unpaid.slug)
    expect(billing.code).toBe(1)
    expect(billing.stderr).toMatch(/berth: Site '.*' is suspended by billing: its subscription is unpaid/)
    const unknown = await berthCli('sites', 'suspend', 'no-such-site', '--reason', 'x')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain("berth: No site 'no-such-site' on this box; berth sites list shows them.")
    const noReason = await berthCli('sites', 'suspend', shop.slug)
    expect(noReason.code).toBe(2)
    expect(noReason.stderr).toContain('give the reason with --reason TEXT')
    expect(await berthCli('sites', 'show', 'no-such-site', '--json')).toMatchObject({ code: 2, stderr: expect.stringContaining('"error":"No site \'no-such-site\' on this box') })
    const active = await berthCli('sites', 'resume', shop.slug)
    expect(active.code).toBe(1)
    expect(active.stderr).toContain('not suspended')
  })
})

describe('berth accounts', () => {
  it("suspend makes the account's key refused (403, saying why) and its site suspended; resume brings both back", async () => {
    const id = (await berthCli('sites', 'show', shop.slug, '--json')).json.account.id
    const list = await berthCli('accounts', 'list', '--json')
    expect(list.json.find((a: { id: string }) => a.id === id)).toMatchObject({ status: 'active', active_keys: 1, sites: [{ slug: shop.slug, status: 'active' }] })

    const suspend = await berthCli('accounts', 'suspend', id, '--reason', 'chargeback fraud')
    expect(suspend.code, suspend.stderr).toBe(0)
    const refused = await eventually(() => api(berth.url, 'GET', '/sites/', { key: shop.key }), (r) => r.status === 403, 'the key refused', 5_000)
    expect(refused.json.error).toMatchObject({ code: 'FORBIDDEN', message: expect.stringContaining('suspended by the hoster') })
    expect((await eventually(() => viaEdge(berth.url, shop.slug), (r) => r.status === 503, 'the suspended page', 5_000)).text).toContain('This site is suspended')
    const shown = await berthCli('accounts', 'show', id)
    expect(shown.stdout).toMatch(/^status:\s+suspended$/m)
    expect(shown.stdout).toMatch(/^reason:\s+chargeback fraud$/m)

    const resume = await berthCli('accounts', 'resume', id, '--json')
    expect(resume.code, resume.stderr).toBe(0)
    expect(resume.json).toMatchObject({ id, status: 'active', sites: [{ slug: shop.slug, status: 'active', suspended_by: null }] })
    expect((await eventually(() => api(berth.url, 'GET', '/sites/', { key: shop.key }), (r) => r.status === 200, 'the key again', 5_000)).json.data[0].slug).toBe(shop.slug)
    await eventually(() => viaEdge(berth.url, shop.slug), (r) => r.status === 200, 'the site again', 10_000)

    const unknown = await berthCli('accounts', 'show', '00000000-0000-4000-8000-000000000000')
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toContain('No account 00000000-0000-4000-8000-000000000000 on this box')
  })
})

describe('berth sites delete', () => {
  it('schedules the deletion as the API does, and --now removes the site for good', async () => {
    const scheduled = await berthCli('sites', 'delete', unpaid.slug, '--json')
    expect(scheduled.code, scheduled.stderr).toBe(0)
    expect(scheduled.json).toMatchObject({ slug: unpaid.slug, status: 'pending_deletion' })
    expect((await eventually(() => viaEdge(berth.url, unpaid.slug), (r) => r.status === 404, 'the pending-deletion page', 5_000)).text).toContain('scheduled for deletion')
    const now = await berthCli('sites', 'delete', unpaid.slug, '--now')
    expect(now.code, now.stderr).toBe(0)
    expect(now.stdout).toContain(`Deleted ${unpaid.slug}`)
    expect((await api(berth.url, 'GET', `/sites/${unpaid.slug}/`, { key: unpaid.key })).status).toBe(404)
    const list = await berthCli('sites', 'list', '--json')
    expect(list.json.map((s: { slug: string }) => s.slug)).not.toContain(unpaid.slug)
    const [container] = await docker.listContainers({ all: true, filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${unpaid.slug}`] } })
    expect(container).toBeUndefined()
  })
})
