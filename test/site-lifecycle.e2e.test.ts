import { Database } from 'bun:sqlite'
import Docker from 'dockerode'
import { createHash, randomBytes, randomUUID } from 'node:crypto'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, readyCheckout, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { removeEngineInstance } from './helpers/engine-instance'
import { execIn } from './helpers/sites'

/** Scale and restore answer at once; the container follows (the site's `applying` until it has). */
async function applied(url: string, slug: string, key: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const res = await api(url, 'GET', `/sites/${slug}/`, { key })
    if (res.json?.data?.applying === null) return
    await Bun.sleep(50)
  }
  throw new Error(`site ${slug} is still applying a change after 30 s`)
}

/**
 * Scale, delete, restore and the deletion reaper on the compiled binary and a real Docker engine.
 * The reaper test restarts the binary a week later with dev.clock_offset_seconds on the same
 * data folder.
 */
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_CONTAINERS_RECONCILE_SECONDS: '2' }
const DAY_S = 24 * 3600

let berth: Berth
const instances: string[] = []
beforeAll(async () => {
  berth = await startBerth({ env: ENV })
  instances.push(instanceOf(berth.dataDir))
}, 60_000)
afterAll(async () => {
  await berth?.dispose()
  await Promise.all(instances.map(removeInstance))
})

describe('scale', () => {
  it('starter (shared) to business (vps): php image, the new limits, files kept, the subscription follows', async () => {
    const slug = uniqueSlug('scale')
    const { data } = await buyDirect(berth.url, { slug, sku: 'svc_starter_monthly' })
    const key = data.api_key as string
    expect(await waitForSite(berth.url, key, slug)).toBe('active')
    const before = await containerOf(slug)
    expect(before.Config.Image).toBe('berth/static:1')
    const marker = `kept-${Date.now()}`
    await execIn(before.Id, ['sh', '-c', `echo ${marker} > /home/site/public/marker.txt`])

    const res = await api(berth.url, 'POST', `/sites/${slug}/scale/`, { key, body: { new_plan: 'business' } })
    await applied(berth.url, slug, key)
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ slug, plan: 'business', hosting_type: 'vps', status: 'active', resources: { memory_mb: 1024, cpu_cores: 1, disk_gb: 20 } })

    const after = await containerOf(slug)
    expect(after.Id).not.toBe(before.Id)
    expect(after.Config.Image).toBe('berth/php:1')
    expect(after.State.Running).toBe(true)
    expect(after.HostConfig.Memory).toBe(1024 * 1024 * 1024) // business memory_mb
    expect(after.HostConfig.MemorySwap).toBe(1024 * 1024 * 1024)
    expect(after.HostConfig.NanoCpus).toBe(1e9) // business cpu_cores
    expect(after.HostConfig.PidsLimit).toBe(256) // containers.pids_limit: the same for every plan
    expect(before.HostConfig.Memory).toBe(256 * 1024 * 1024)
    const page = await viaEdge(berth.url, slug, '/marker.txt')
    expect(page.status).toBe(200)
    expect(page.text.trim()).toBe(marker)

    const sub = readDb(berth.dataDir, (db) => db.query('SELECT s.plan_slug, s.amount_cents, s.status FROM subscriptions s JOIN sites x ON x.subscription_id = s.id WHERE x.slug = ?').get(slug))
    expect(sub).toEqual({ plan_slug: 'business', amount_cents: 2400, status: 'active' })
    expect((await api(berth.url, 'GET', `/sites/${slug}/`, { key })).json.data.plan).toBe('business')

    // SSH comes with the vps plan: a port of its own, published, and the site's host key.
    let ssh = await api(berth.url, 'GET', `/sites/${slug}/ssh/`, { key })
    for (let i = 0; i < 50 && ssh.json.data?.host_keys?.length === 0; i++) {
      await Bun.sleep(100)
      ssh = await api(berth.url, 'GET', `/sites/${slug}/ssh/`, { key })
    }
    expect(ssh.status, ssh.text).toBe(200)
    expect(ssh.json.data.host_keys[0].type).toBe('ssh-ed25519')
    const published = (await containerOf(slug)).HostConfig.PortBindings?.['2222/tcp']?.[0]?.HostPort
    expect(Number(published)).toBe(ssh.json.data.port)

    // vps to dedicated runs the same image: the limits change in place, the same container. Its
    // disk grows from 20 to 80 GB (issue 38): online where the host lets the disks helper resize a
    // mounted filesystem, else with the container stopped for the resize and started again.
    const bigger = await api(berth.url, 'POST', `/sites/${slug}/scale/`, { key, body: { new_plan: 'performance' } })
    await applied(berth.url, slug, key)
    expect(bigger.status, bigger.text).toBe(200)
    const resized = await containerOf(slug)
    expect(resized.Id).toBe(after.Id)
    expect(resized.State.Running).toBe(true)
    expect([resized.HostConfig.Memory, resized.HostConfig.NanoCpus]).toEqual([4096 * 1024 * 1024, 2e9])
    expect((await viaEdge(berth.url, slug, '/marker.txt')).text.trim()).toBe(marker)
  })

  it('refuses unknown and deprecated plans (422), other accounts (404) and a read-only key (403)', async () => {
    const slug = uniqueSlug('scale-no')
    const { data } = await buyDirect(berth.url, { slug })
    const key = data.api_key as string
    for (const plan of ['platinum', 'legacy-basic']) {
      const res = await api(berth.url, 'POST', `/sites/${slug}/scale/`, { key, body: { new_plan: plan } })
      expect(res.status, plan).toBe(422)
      expect(res.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: 'new_plan' })
    }
    const stranger = (await api(berth.url, 'POST', '/auth/register/', { body: {} })).json.data.api_key
    const other = await api(berth.url, 'POST', `/sites/${slug}/scale/`, { key: stranger, body: { new_plan: 'business' } })
    expect(other.status).toBe(404)
    expect(other.json.error.code).toBe('NOT_FOUND')
    const readOnly = (await api(berth.url, 'POST', '/keys/create/', { key, body: { name: 'reader', scopes: ['read'] } })).json.data.api_key
    const forbidden = await api(berth.url, 'POST', `/sites/${slug}/scale/`, { key: readOnly, body: { new_plan: 'business' } })
    expect(forbidden.status).toBe(403)
    expect(forbidden.json.error.code).toBe('FORBIDDEN')
    expect((await api(berth.url, 'GET', `/sites/${slug}/`, { key })).json.data.plan).toBe('starter')
  })
})

describe('delete and restore', () => {
  it('a deleted site shows the pending-deletion page and refuses writes; restored, it serves again', async () => {
    const slug = uniqueSlug('del')
    const { data } = await buyDirect(berth.url, { slug })
    const key = data.api_key as string
    expect(await waitForSite(berth.url, key, slug)).toBe('active')
    expect((await viaEdge(berth.url, slug)).status).toBe(200)

    const started = Date.now()
    const res = await api(berth.url, 'DELETE', `/sites/${slug}/delete/`, { key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.status).toBe('pending_deletion')
    const due = Date.parse(res.json.data.deletion_scheduled_for) - started
    expect(due).toBeGreaterThan(7 * DAY_S * 1000 - 60_000)
    expect(due).toBeLessThan(7 * DAY_S * 1000 + 60_000)

    const page = await viaEdge(berth.url, slug)
    expect(page.status).toBe(404)
    expect(page.text).toContain('This site has been scheduled for deletion')
    expect((await containerOf(slug)).State.Running).toBe(false)
    for (const [method, path, body] of [['DELETE', 'delete/', undefined], ['POST', 'scale/', { new_plan: 'business' }]] as const) {
      const refused = await api(berth.url, method, `/sites/${slug}/${path}`, { key, body })
      expect(refused.status, `${method} ${path}`).toBe(409)
      expect(refused.json.error.code).toBe('CONFLICT')
    }
    // Still pending after a reconcile pass (every 2 s here): not served, not restarted.
    await Bun.sleep(2_500)
    expect((await viaEdge(berth.url, slug)).status).toBe(404)
    expect((await containerOf(slug)).State.Running).toBe(false)

    const restored = await api(berth.url, 'POST', `/sites/${slug}/restore/`, { key })
    await applied(berth.url, slug, key)
    expect(restored.status, restored.text).toBe(200)
    expect(restored.json.data).toMatchObject({ status: 'active', deletion_scheduled_for: null })
    expect((await containerOf(slug)).State.Running).toBe(true)
    const back = await viaEdge(berth.url, slug)
    expect(back.status).toBe(200)
    expect(back.text.toLowerCase()).toContain('<html')
    expect((await api(berth.url, 'POST', `/sites/${slug}/restore/`, { key })).status).toBe(409)
  })

  it('a week and an hour later (binary restarted with the clock moved), the reaper has removed everything', async () => {
    const first = await startBerth({ env: ENV })
    instances.push(instanceOf(first.dataDir))
    let later: Berth | undefined
    try {
      const slug = uniqueSlug('reap')
      const { data } = await buyDirect(first.url, { slug })
      const key = data.api_key as string
      expect(await waitForSite(first.url, key, slug)).toBe('active')
      // A site-scoped key of this site, as the claim flow issues: read + write, bound to the site.
      const siteKey = insertSiteKey(first.dataDir, slug)
      expect((await api(first.url, 'GET', `/sites/${slug}/`, { key: siteKey })).status).toBe(200)
      expect((await api(first.url, 'DELETE', `/sites/${slug}/delete/`, { key })).status).toBe(200)
      await first.stop()

      later = await startBerth({ dataDir: first.dataDir, env: { ...ENV, BERTH_DEV_CLOCK_OFFSET_SECONDS: String(7 * DAY_S + 3600) } })
      const deadline = Date.now() + 20_000
      let listed: string[] = [slug]
      while (listed.includes(slug) && Date.now() < deadline) {
        await Bun.sleep(100)
        listed = (await api(later.url, 'GET', '/sites/', { key })).json.data.map((s: { slug: string }) => s.slug)
      }
      expect(listed).not.toContain(slug)
      expect(later.output()).toContain('site deleted after its grace period')

      const filters = { label: [`dev.berth.site-slug=${slug}`] }
      expect(await docker.listContainers({ all: true, filters })).toEqual([])
      expect((await docker.listVolumes({ filters })).Volumes ?? []).toEqual([])
      expect(await docker.listNetworks({ filters })).toEqual([])
      const gone = await api(later.url, 'GET', `/sites/${slug}/`, { key: siteKey })
      expect(gone.status).toBe(401)
      expect(gone.json.error.code).toBe('UNAUTHORIZED')
      expect((await api(later.url, 'GET', `/sites/${slug}/`, { key })).status).toBe(404)
      const rows = readDb(first.dataDir, (db) => ({
        site: db.query("SELECT status, deleted_at FROM sites WHERE slug = ?").get(slug) as { status: string; deleted_at: number },
        sub: db.query('SELECT s.status, s.ended_at FROM subscriptions s JOIN sites x ON x.subscription_id = s.id WHERE x.slug = ?').get(slug) as { status: string; ended_at: number | null },
      }))
      expect(rows.site.status).toBe('deleted')
      expect(rows.sub.status).toBe('ended')
      // Both stamped by the shifted clock: a week after now.
      expect(rows.site.deleted_at - Date.now()).toBeGreaterThan(7 * DAY_S * 1000)
      expect(rows.sub.ended_at! - Date.now()).toBeGreaterThan(7 * DAY_S * 1000)
      // The slug is free again: a new checkout can hold it.
      await readyCheckout(later.url, { slug })
    } finally {
      await later?.stop()
      await first.dispose()
      rmSync(first.dataDir, { recursive: true, force: true })
    }
  })
})

/** The inspected container of a site (the only one with that slug label). */
async function containerOf(slug: string): Promise<Docker.ContainerInspectInfo> {
  const found = await docker.listContainers({ all: true, filters: { label: [`dev.berth.site-slug=${slug}`] } })
  expect(found).toHaveLength(1)
  return docker.getContainer(found[0].Id).inspect()
}

function readDb<T>(dataDir: string, fn: (db: Database) => T): T {
  const db = new Database(join(dataDir, 'berth.db'))
  try {
    db.run('PRAGMA busy_timeout = 5000')
    return fn(db)
  } finally {
    db.close()
  }
}

/** The random id of a Berth installation, in the labels of everything it creates in Docker. */
function instanceOf(dataDir: string): string {
  return readDb(dataDir, (db) => (db.query("SELECT value FROM settings WHERE key = 'instance_id'").get() as { value: string }).value)
}

/**
 * Writes a site-scoped key straight into the store (the claim flow's kind of key), in the format
 * KeysService uses: `svc_` + 48 hex, only its SHA-256 stored; returns the key.
 */
function insertSiteKey(dataDir: string, slug: string): string {
  const key = `svc_${randomBytes(24).toString('hex')}`
  readDb(dataDir, (db) => {
    const site = db.query('SELECT id, account_id FROM sites WHERE slug = ? AND status <> ?').get(slug, 'deleted') as { id: string; account_id: string }
    db.query('INSERT INTO api_keys (id, account_id, name, prefix, key_hash, scopes, site_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(randomUUID(), site.account_id, 'claimed', key.slice(0, 12), createHash('sha256').update(key).digest('hex'), '["read","write"]', site.id, Date.now())
  })
  return key
}

/** Removes the containers, networks and volumes (with their disks) one Berth installation created. */
async function removeInstance(instance: string) {
  await removeEngineInstance(docker, instance)
}
