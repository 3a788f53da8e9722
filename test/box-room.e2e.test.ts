import { spawnSync } from 'bun'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { ENGINE_SOCKET } from './helpers/engine'
import { buyDirect, readyCheckout, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * Issue 38, item 4: the box keeps room for itself. The compiled binary serves from a data folder
 * that is a 256 MiB tmpfs, with a reserve of 64 MiB (disk.reserve_bytes). A file filling that
 * filesystem to under the reserve stands for sites that filled the disk: new purchases (a new
 * checkout, paying one opened before, a site added to an agency plan) and snapshots are refused with 507 and a message that
 * says why, while the existing site keeps serving and taking file writes; GET /status/, /metrics
 * and berth doctor say so. Removing the file makes room again: the same purchase goes through.
 */
const MIB = 1024 ** 2
const GIB = 1024 ** 3
const RESERVE = 64 * MIB
const TOKEN = 'e2e-room-metrics-token-0123456789abcdef'
const dir = mkdtempSync(join(tmpdir(), 'berth-room-'))
const data = join(dir, 'data')
const filler = join(data, 'filler.bin')
const env = { BERTH_DISK_RESERVE_BYTES: String(RESERVE), BERTH_DISK_RESERVE_PERCENT: '0' }
let berth: Berth
let key: string
let slug: string
/** A checkout made ready while there was room, paid only once the disk is low. */
let pending: { id: string; secret: string }
let pendingSlug: string
/** A checkout opened while there was room, its slug set only once the disk is low. */
let opened: { id: string; secret: string }

const refused = (res: { status: number; json: any }) => {
  expect(res.status, JSON.stringify(res.json)).toBe(507)
  expect(res.json.error.code).toBe('INSUFFICIENT_STORAGE')
  expect(res.json.error.message).toMatch(/low on disk space .* free, under the 64 MiB it keeps for itself.*existing sites keep working\. Retry later, or ask the hoster \(GET \/status\/ shows disk\.low_space\)\.$/)
}

const status = async () => (await api(berth.url, 'GET', '/status/')).json.data

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`${berth.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  if (!line) throw new Error(`no ${name} in /metrics:\n${text}`)
  return Number(line.split(' ')[1])
}

function doctorDisk() {
  const p = spawnSync([BINARY, 'doctor', '--data-dir', data, '--json'], {
    stdout: 'pipe', stderr: 'pipe',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET, BERTH_DNS_LISTEN: 'off', BERTH_SERVER_LISTEN: '127.0.0.1:0', ...env },
  })
  const checks = JSON.parse(p.stdout.toString()) as { name: string; status: string; detail: string; fix: string }[]
  return checks.find((c) => c.name === 'disk')!
}

beforeAll(async () => {
  mkdirSync(data, { recursive: true })
  const mounted = spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=256m', 'tmpfs', data])
  if (mounted.exitCode !== 0) throw new Error(`mount: ${mounted.stderr.toString()}`)
  berth = await startBerth({ dataDir: data, env: { ...env, BERTH_METRICS_TOKEN: TOKEN, BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(berth)
  slug = uniqueSlug('room')
  key = (await buyDirect(berth.url, { sku: 'svc_agency-vps_monthly', slug })).data.api_key as string
  expect(await waitForSite(berth.url, key, slug, 120_000)).toBe('active')
  pendingSlug = uniqueSlug('room-late')
  pending = await readyCheckout(berth.url, { sku: 'svc_starter_monthly', slug: pendingSlug, key })
  const created = await api(berth.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } })
  opened = { id: created.json.data.id, secret: created.json.data.checkout_secret }
}, 180_000)

afterAll(async () => {
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
  spawnSync(['umount', data])
  rmSync(dir, { recursive: true, force: true })
}, 120_000)

describe('the box keeps room for itself', () => {
  it('under the reserve: purchases and snapshots answer 507, the site serves, status, metrics and doctor say so; with room again a purchase goes through', async () => {
    const roomy = await status()
    expect(roomy.status).toBe('ok')
    expect(roomy.disk).toMatchObject({ low_space: false, threshold_bytes: RESERVE, total_bytes: 256 * MIB, sites_disk_gb: 20 })

    // Sites filled the disk: leave half the reserve free.
    const fill = spawnSync(['fallocate', '-l', String(roomy.disk.free_bytes - RESERVE / 2), filler])
    expect(fill.exitCode, fill.stderr.toString()).toBe(0)

    refused(await api(berth.url, 'POST', '/acp/checkouts/', { body: { sku: 'svc_starter_monthly' } }))
    refused(await api(berth.url, 'POST', `/acp/checkouts/${opened.id}/update/?checkout_secret=${opened.secret}`, { body: { requested_slug: uniqueSlug('room-never') } }))
    const pay = { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' }
    refused(await api(berth.url, 'POST', `/acp/checkouts/${pending.id}/complete/`, { body: pay, headers: { 'x-checkout-secret': pending.secret } }))
    // Nothing was charged: the session is still ready to pay.
    expect((await api(berth.url, 'GET', `/acp/checkouts/${pending.id}/`, { headers: { 'x-checkout-secret': pending.secret } })).json.data.status).toBe('ready')
    const added = uniqueSlug('room-added')
    refused(await api(berth.url, 'POST', '/sites/create/', { key, body: { slug: added } }))
    refused(await api(berth.url, 'POST', `/sites/${slug}/snapshot/`, { key }))
    expect((await api(berth.url, 'GET', `/sites/${slug}/snapshots/`, { key })).json.data).toEqual([])

    // What exists keeps working: the site serves, its files take writes, the store takes changes.
    const write = await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/index.html', content: '<h1>still here</h1>' } })
    expect(write.status, write.text).toBe(200)
    expect(await viaEdge(berth.url, slug)).toMatchObject({ status: 200, text: '<h1>still here</h1>' })
    expect((await api(berth.url, 'POST', '/keys/create/', { key, body: { name: 'while-low', scopes: ['read'] } })).status).toBe(201)

    const low = await status()
    expect(low.status).toBe('degraded')
    expect(low.disk.low_space).toBe(true)
    expect(low.disk.free_bytes).toBeLessThan(RESERVE)
    expect(low.disk.sites_disk_gb).toBe(20)
    expect(await metric('berth_disk_low')).toBe(1)
    expect(await metric('berth_disk_free_bytes')).toBeLessThan(RESERVE)
    expect(await metric('berth_disk_total_bytes')).toBe(256 * MIB)
    expect(await metric('berth_disk_reserve_bytes')).toBe(RESERVE)
    expect(await metric('berth_sites_disk_quota_bytes')).toBe(20 * GIB)
    const doctor = doctorDisk()
    expect(doctor.status).toBe('FAIL')
    expect(doctor.detail).toMatch(/the sites' plans hold 20 GiB \(disk_gb\).*under the reserve of 64 MiB, so berth serve refuses new sites, snapshots and backups \(507\)/)
    expect(doctor.fix).toContain('disk.reserve_bytes')

    // The hoster makes room: the same session is paid, its site provisioned; snapshots work again.
    rmSync(filler)
    const done = await api(berth.url, 'POST', `/acp/checkouts/${pending.id}/complete/`, { body: pay, headers: { 'x-checkout-secret': pending.secret } })
    expect(done.status, done.text).toBe(201)
    expect(await waitForSite(berth.url, key, pendingSlug, 120_000)).toBe('active')
    expect((await api(berth.url, 'POST', `/sites/${slug}/snapshot/`, { key })).status).toBe(200)
    expect((await api(berth.url, 'POST', '/sites/create/', { key, body: { slug: added } })).status).toBe(201)
    const again = await status()
    expect(again).toMatchObject({ status: 'ok', disk: { low_space: false, sites_disk_gb: 45 } })
    expect(await metric('berth_disk_low')).toBe(0)
    expect(doctorDisk().status).not.toBe('FAIL')
  }, 180_000)
})
