import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess, HomeRuntime } from '../../test/helpers/home-runtime'
import { inProcess } from '../../test/helpers/in-process'

/**
 * A site's disk limit as agents see it (issue 38, docs/api.md "Disk"), in-process on a real
 * SQLite store. The homes live on a tmpfs of 512 KiB, so a write past it fails with a real ENOSPC
 * from the kernel; the runtime's `siteDisk` figures are the recording runtime's (set per test).
 * test/disk-quota.e2e.test.ts runs the same on the compiled binary with each site's own ext4 disk.
 */
const GIB = 1024 ** 3
const runtime = new HomeRuntime()
const h = inProcess({ runtime })
const sites = (path: string) => `/api/v1/sites/${path}`

beforeAll(() => {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=512k', 'tmpfs', runtime.root])
})
afterAll(async () => {
  await h.close()
  runtime.close()
  execFileSync('umount', [runtime.root])
})

const kib = (n: number) => Buffer.alloc(n * 1024, 'x').toString('base64')

describe('the files API on a full disk', () => {
  it('answers 507 DISK_FULL naming the site with its usage; nothing half-written is left and the old file stays', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'df')
    runtime.disks.set(slug, { limitBytes: 5 * GIB, usedBytes: 5 * GIB - 4096, availableBytes: 4096 })
    const first = await h.call('POST', sites(`${slug}/files/upload/`), { key, body: { path: 'public/a.bin', content_b64: kib(200) } })
    expect(first.status, first.text).toBe(200)
    const full = await h.call('POST', sites(`${slug}/files/upload/`), { key, body: { path: 'public/b.bin', content_b64: kib(400) } })
    expect(full.status, full.text).toBe(507)
    expect(full.json.error).toMatchObject({ code: 'DISK_FULL', param: 'tenant_slug', details: { used_bytes: 5 * GIB - 4096, limit_bytes: 5 * GIB } })
    expect(full.json.error.message).toMatch(/disk of site '.*' is full \(5\.00 GB of 5\.00 GB used, 100 %\)/)
    expect(full.json.error.message).toMatch(/Delete files \(POST \/sites\/.*\/files\/delete\/\) or scale to a plan with more disk \(POST \/sites\/.*\/scale\/\)/)
    // Replacing a file with one that does not fit keeps the old one whole.
    const replace = await h.call('POST', sites(`${slug}/files/upload/`), { key, body: { path: 'public/a.bin', content_b64: kib(400) } })
    expect(replace.status).toBe(507)
    const home = await runtime.homePath(slug)
    expect(readFileSync(join(home, 'public/a.bin')).length).toBe(200 * 1024)
    expect(readdirSync(join(home, 'public')).filter((n) => n.startsWith('.berth-'))).toEqual([])
    // A text write and a folder are refused alike; after a delete the site writes again.
    const write = await h.call('POST', sites(`${slug}/files/write/`), { key, body: { path: 'public/c.txt', content: 'y'.repeat(400 * 1024) } })
    expect([write.status, write.json.error?.code]).toEqual([507, 'DISK_FULL'])
    const deleted = await h.call('POST', sites(`${slug}/files/delete/`), { key, body: { path: 'public/a.bin' } })
    expect(deleted.status).toBe(200)
    const again = await h.call('POST', sites(`${slug}/files/upload/`), { key, body: { path: 'public/b.bin', content_b64: kib(300) } })
    expect(again.status, again.text).toBe(200)
    await h.call('POST', sites(`${slug}/files/delete/`), { key, body: { path: 'public/b.bin' } })
  })
})

describe('the site view and metrics', () => {
  it('show the disk used and its limit, and warn from 90 % on', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'dv')
    runtime.disks.set(slug, { limitBytes: 5 * GIB, usedBytes: GIB, availableBytes: 4 * GIB })
    const calm = await h.call('GET', sites(`${slug}/`), { key })
    expect(calm.status, calm.text).toBe(200)
    expect(calm.json.data).toMatchObject({ usage: { disk_bytes: GIB, disk_limit_bytes: 5 * GIB }, warnings: [] })
    const metrics = await h.call('GET', sites(`${slug}/metrics/`), { key })
    expect(metrics.json.data.current).toMatchObject({ disk_bytes: GIB, disk_limit_bytes: 5 * GIB })

    const used = Math.round(4.6 * GIB)
    runtime.disks.set(slug, { limitBytes: 5 * GIB, usedBytes: used, availableBytes: 5 * GIB - used })
    h.clock.advance(5_000) // past the figures' brief reuse
    const warned = await h.call('GET', sites(`${slug}/`), { key })
    expect(warned.status, warned.text).toBe(200)
    expect(warned.json.data.usage.disk_bytes).toBe(used)
    expect(warned.json.data.warnings).toEqual([{ code: 'disk_almost_full', message: expect.stringMatching(/uses 4\.60 GB of its 5\.00 GB disk \(92 %\).*scale to a plan with more disk/) }])
  })

  it('gives null figures and no warning for a site whose runtime reports no disk', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'dn')
    const res = await h.call('GET', sites(`${slug}/`), { key })
    expect(res.json.data).toMatchObject({ usage: { disk_bytes: null, disk_limit_bytes: null }, warnings: [] })
  })
})

describe('a plan change and the disk', () => {
  const planOf = (slug: string) => (h.services.store.sqlite.query('SELECT s.plan_slug AS site, b.plan_slug AS sub, b.amount_cents AS cents FROM sites s JOIN subscriptions b ON b.id = s.subscription_id WHERE s.slug = ?').get(slug) as { site: string; sub: string; cents: number })

  it('a plan with more disk grows it online (resizeSiteDisk with the new disk_gb)', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'du')
    runtime.disks.set(slug, { limitBytes: 5 * GIB, usedBytes: 4 * GIB, availableBytes: GIB })
    const res = await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: 'business' } })
    expect(res.status, res.text).toBe(200)
    await h.services.jobs.drain()
    expect(runtime.resized.filter((r) => r.slug === slug).map((r) => r.diskGb)).toEqual([20])
    expect(runtime.disks.get(slug)!.limitBytes).toBe(20 * GIB)
  })

  it('a plan with less disk than the files use is refused with 409 DISK_TOO_SMALL: nothing changed, nothing charged', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_business_monthly', 'dd')
    runtime.disks.set(slug, { limitBytes: 20 * GIB, usedBytes: 6 * GIB, availableBytes: 14 * GIB })
    const before = planOf(slug)
    const charges = h.services.store.sqlite.query('SELECT COUNT(*) AS n FROM payments').get() as { n: number }
    const res = await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: 'starter' } })
    expect(res.status, res.text).toBe(409)
    expect(res.json.error).toMatchObject({ code: 'DISK_TOO_SMALL', param: 'new_plan', details: { used_bytes: 6 * GIB, wanted_bytes: 5 * GIB, new_plan: 'starter' } })
    expect(res.json.error.message).toMatch(/uses 6\.00 GB of disk, more than the 5 GB of plan 'starter'; nothing was changed/)
    await h.services.jobs.drain()
    expect(planOf(slug)).toEqual(before)
    expect((h.services.store.sqlite.query('SELECT COUNT(*) AS n FROM payments').get() as { n: number }).n).toBe(charges.n)
    expect(runtime.resized.filter((r) => r.slug === slug)).toEqual([])
  })

  it('a plan with less disk than the limit but more than used is taken, and the disk shrinks to it', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_business_monthly', 'ds')
    runtime.disks.set(slug, { limitBytes: 20 * GIB, usedBytes: 2 * GIB, availableBytes: 18 * GIB })
    const res = await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: 'starter' } })
    expect(res.status, res.text).toBe(200)
    await h.services.jobs.drain()
    expect(planOf(slug).site).toBe('starter')
    expect(runtime.resized.filter((r) => r.slug === slug).map((r) => r.diskGb)).toEqual([5])
  })
})

describe('restores on a full disk', () => {
  it('a snapshot that does not fit beside the files is refused before anything changes, with DISK_FULL and the figures', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_business_monthly', 'dr')
    const taken = await h.call('POST', sites(`${slug}/snapshot/`), { key })
    expect(taken.status, taken.text).toBe(200)
    await h.services.jobs.drain()
    const home = await runtime.homePath(slug)
    const upload = await h.call('POST', sites(`${slug}/files/write/`), { key, body: { path: 'public/later.txt', content: 'after the snapshot' } })
    expect(upload.status, upload.text).toBe(200)
    runtime.disks.set(slug, { limitBytes: 20 * GIB, usedBytes: 20 * GIB - 1024, availableBytes: 1024 })
    const pausedBefore = runtime.paused.length
    const restoring = await h.call('POST', sites(`${slug}/snapshots/${taken.json.data.id}/restore/`), { key })
    expect(restoring.status, restoring.text).toBe(200)
    await h.services.jobs.drain()
    const after = await h.call('GET', sites(`${slug}/snapshots/${taken.json.data.id}/`), { key })
    expect(after.json.data).toMatchObject({ status: 'ready', restored_at: null })
    expect(after.json.data.error).toMatch(/^The last restore failed; DISK_FULL: restoring snapshot .* needs about \d+ KB on the disk of site '.*', which has 1 KB free \(20\.00 GB of 20\.00 GB used\); nothing was changed/)
    // The site was never frozen, and its files are as they were.
    expect(runtime.paused.length).toBe(pausedBefore)
    expect(readFileSync(join(home, 'public/later.txt'), 'utf8')).toBe('after the snapshot')
  })
})

describe('a resize that does not take', () => {
  it('fails the apply job (retried, logged) instead of calling the disk resized; the container runs again meanwhile', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'dk')
    runtime.disks.set(slug, { limitBytes: 5 * GIB, usedBytes: GIB, availableBytes: 4 * GIB })
    const real = runtime.resizeSiteDisk.bind(runtime)
    let calls = 0
    runtime.resizeSiteDisk = async (site) => {
      if (++calls > 1) return real(site) // the first resize reports success but leaves the size
    }
    const ensured = runtime.callsOf('ensureSite', slug).length
    expect((await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: 'business' } })).status).toBe(200)
    await h.services.jobs.drain()
    expect(runtime.callsOf('ensureSite', slug).length).toBe(ensured + 1)
    expect(h.log.lines.some((e) => e.msg === 'job failed; will retry' && String(e.error).includes(`the disk of site '${slug}' holds ${5 * GIB} bytes after its resize to 20 GB`))).toBe(true)
    h.clock.advance(60_000)
    await h.services.jobs.drain()
    expect(calls).toBe(2)
    expect(runtime.disks.get(slug)!.limitBytes).toBe(20 * GIB)
    runtime.resizeSiteDisk = real
  })
})
