import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { restartDockerd } from './helpers/dockerd'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { hostHome, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * Each site's disk (drivers/runtime/site-disks.ts) through the incidents of a box: Berth killed
 * -9 and the engine restarted with sites at their limits, a disk missing when the engine starts
 * the sites again (what a reboot leaves: no loop device, no mount), and the removal of a site
 * for good. Solo tier: it restarts the machine's engine.
 */
const GIB = 1024 ** 3
let berth: Berth
let configDir: string
let key: string
const sites: string[] = []
const marker = (slug: string) => `disk-${slug}`

beforeAll(async () => {
  configDir = mkdtempSync(join(tmpdir(), 'berth-disk-restart-'))
  const config = join(configDir, 'berth.toml')
  writeFileSync(config, [
    '[[plans]]', 'slug = "tiny"', 'name = "Tiny"', 'track = "single_site"', 'hosting_type = "shared"',
    'price_monthly = 1', 'max_sites = 1', 'memory_mb = 128', 'cpu_cores = 1', 'disk_gb = 1', '',
  ].join('\n'))
  berth = await startBerth({ env: { BERTH_CONFIG: config } })
  instanceOf(berth)
  for (const name of ['full', 'other']) {
    const slug = uniqueSlug(`dr-${name}`)
    const { data } = await buyDirect(berth.url, { slug, sku: 'svc_tiny_monthly' })
    key = data.api_key
    expect(await waitForSite(berth.url, key, slug)).toBe('active')
    const wrote = await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/marker.txt', content: marker(slug) } })
    expect(wrote.status, wrote.text).toBe(200)
    sites.push(slug)
  }
  // The first site at its limit: a write that stops at "no space".
  const fill = await siteShell(berth, sites[0]!, 'dd if=/dev/zero of=fill bs=4M count=400 2>&1; echo exit=$?')
  expect(fill.output).toMatch(/No space left on device/)
}, 180_000)

afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
  rmSync(configDir, { recursive: true, force: true })
})

/** The site's filesystem as its container sees it: size and used, in bytes. */
async function diskInSite(slug: string): Promise<{ size: number; used: number }> {
  const out = (await siteShell(berth, slug, 'df -k /home/site | tail -n 1')).output.trim().split(/\s+/)
  return { size: Number(out[1]) * 1024, used: Number(out[2]) * 1024 }
}

async function servesItsMarker(slug: string, withinMs: number): Promise<void> {
  const deadline = Date.now() + withinMs
  for (;;) {
    const res = await viaEdge(berth.url, slug, '/marker.txt').catch(() => ({ status: 0, text: '' }))
    if (res.status === 200 && res.text === marker(slug)) return
    if (Date.now() > deadline) throw new Error(`${slug} does not serve its files (last ${res.status} ${res.text.slice(0, 80)}): ${berth.output().slice(-1_500)}`)
    await Bun.sleep(100)
  }
}

/** Whether a loop device is backed by a file of the volume folder `folder`. */
function loopOf(folder: string): boolean {
  return spawnSync('losetup', ['-a'], { encoding: 'utf8' }).stdout.includes(folder)
}

describe("a site's disk", () => {
  it('comes back with its files and its limit after kill -9 of Berth and a restart of the engine', async () => {
    await berth.kill9()
    await restartDockerd()
    await berth.restart()
    for (const slug of sites) await servesItsMarker(slug, 60_000)
    const full = await diskInSite(sites[0]!)
    expect(full.size).toBeGreaterThan(0.98 * GIB)
    expect(full.size).toBeLessThan(1.02 * GIB)
    expect(full.used).toBeGreaterThan(0.97 * GIB)
    // Still at its limit: a write fails with "no space"; the other site writes.
    expect((await siteShell(berth, sites[0]!, 'dd if=/dev/zero of=more bs=1M count=8 2>&1')).output).toMatch(/No space left on device/)
    expect((await siteShell(berth, sites[1]!, 'dd if=/dev/zero of=more bs=1M count=8 2>&1; echo exit=$?')).output).toMatch(/exit=0/)
    // Room made, it writes again.
    expect((await siteShell(berth, sites[0]!, 'rm -f fill more; dd if=/dev/zero of=more bs=1M count=8 2>&1; echo exit=$?')).output).toMatch(/exit=0/)
  }, 180_000)

  it('missing when the engine starts its container (a box restarted) is mounted again, and the site serves its own files', async () => {
    const slug = sites[1]!
    const folder = dirname(await hostHome(berth, slug))
    await berth.kill9()
    // What a reboot leaves: the disk not mounted, its loop device gone. (A stopping engine
    // unmounts its data root's bind, and the disks beneath with it: the same state.) The engine
    // then starts the containers that ran.
    let mounted = true
    let loopLeft = true
    await restartDockerd(undefined, async () => {
      const data = join(folder, '_data')
      if (spawnSync('mountpoint', ['-q', data]).status === 0) spawnSync('umount', [data])
      for (let i = 0; i < 100 && loopOf(folder); i++) await Bun.sleep(50)
      mounted = spawnSync('mountpoint', ['-q', data]).status === 0
      loopLeft = loopOf(folder)
    })
    expect(mounted).toBe(false)
    expect(loopLeft).toBe(false)
    // The engine's restart policy ran the container on the immutable empty folder beneath:
    // nothing it writes lands outside the disk.
    expect(spawnSync('sh', ['-c', `ls -A ${join(folder, '_data')}`], { encoding: 'utf8' }).stdout.trim()).toBe('')
    await berth.restart()
    await servesItsMarker(slug, 60_000)
    expect(loopOf(folder)).toBe(true)
    const disk = await diskInSite(slug)
    expect(disk.size).toBeGreaterThan(0.98 * GIB)
    expect(disk.size).toBeLessThan(1.02 * GIB)
    const view = await api(berth.url, 'GET', `/sites/${slug}/`, { key })
    expect(view.json.data.status).toBe('active')
  }, 180_000)

  it('goes with its site: deleted for good, no image and no loop device are left', async () => {
    const slug = sites[0]!
    const folder = dirname(await hostHome(berth, slug))
    expect(existsSync(join(folder, 'disk.img'))).toBe(true)
    const deleted = spawnSync(BINARY, ['sites', 'delete', slug, '--now', '--data-dir', berth.dataDir], { encoding: 'utf8' })
    expect(deleted.status, deleted.stderr + deleted.stdout).toBe(0)
    expect(existsSync(folder)).toBe(false)
    expect(loopOf(folder)).toBe(false)
  }, 120_000)
})
