import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { restartDockerd } from './helpers/dockerd'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The engine restarts under a running Berth (every container stops with it): Berth's event
 * stream drops, reconnects once the engine is back, and the site serves again; afterwards
 * events flow again, so a container killed then is back within 2 s. Solo tier: it stops every
 * container on the machine, so it runs after the other tiers, alone.
 */
let berth: Berth
let slug: string
let key: string
const marker = `engine-${Date.now()}`

beforeAll(async () => {
  berth = await startBerth()
  instanceOf(berth)
  slug = uniqueSlug('engine')
  const { data } = await buyDirect(berth.url, { slug })
  key = data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
  expect((await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/marker.txt', content: marker } })).status).toBe(200)
}, 120_000)

afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
})

async function servedWithin(limitMs: number): Promise<number> {
  const started = performance.now()
  for (;;) {
    const res = await viaEdge(berth.url, slug, '/marker.txt').catch(() => ({ status: 0, text: '' }))
    if (res.status === 200 && res.text === marker) return performance.now() - started
    if (performance.now() - started > limitMs) throw new Error(`not served within ${limitMs} ms (last ${res.status})`)
    await Bun.sleep(20)
  }
}

describe('an engine restart', () => {
  it('brings the site back once the engine answers, and follows its events again', async () => {
    await restartDockerd()
    // Back without waiting for the 30 s reconcile pass: the reconnect itself compares everything.
    expect(await servedWithin(15_000)).toBeLessThan(15_000)
    expect(berth.output()).toContain('following the engine events again')
    const [c] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${slug}`] } })
    await docker.getContainer(c!.Id).kill()
    expect(await servedWithin(2_000)).toBeLessThan(2_000)
  }, 180_000)
})
