import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * A site's container that dies or is removed behind Berth's back serves again within 2 s, files
 * intact, because Berth follows the engine's events (not the 30 s reconcile pass); meanwhile the
 * edge answers at once with 503 and Retry-After instead of trying a container that is gone.
 */
let berth: Berth
let slug: string
let key: string
const marker = `healed-${Date.now()}`

beforeAll(async () => {
  berth = await startBerth()
  instanceOf(berth)
  slug = uniqueSlug('heal')
  const { data } = await buyDirect(berth.url, { slug })
  key = data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
  const written = await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/marker.txt', content: marker } })
  expect(written.status).toBe(200)
  expect((await viaEdge(berth.url, slug, '/marker.txt')).text).toBe(marker)
}, 120_000)

afterAll(async () => {
  await berth?.dispose()
  await removeInstanceSites(berth)
})

async function containerId(): Promise<string> {
  const [c] = await docker.listContainers({ all: true, filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${slug}`] } })
  if (!c) throw new Error('no container')
  return c.Id
}

/**
 * Polls the site through the edge every 10 ms until it serves the marker again; returns how long
 * that took and every answer seen on the way (status, Retry-After, time to answer).
 */
async function untilServed(since: number, limitMs = 10_000) {
  const seen: { status: number; retryAfter: string | null; ms: number }[] = []
  for (;;) {
    const asked = performance.now()
    const res = await viaEdge(berth.url, slug, '/marker.txt').catch(() => ({ status: 0, text: '', headers: new Headers() }))
    seen.push({ status: res.status, retryAfter: res.headers.get('retry-after'), ms: performance.now() - asked })
    if (res.status === 200 && res.text === marker) return { ms: performance.now() - since, seen }
    if (performance.now() - since > limitMs) throw new Error(`not served again within ${limitMs} ms: ${JSON.stringify(seen.slice(-5))}`)
    await Bun.sleep(10)
  }
}

describe('self-healing on the real engine', () => {
  it.each([
    ['docker rm -f', async (id: string) => docker.getContainer(id).remove({ force: true })],
    ['docker kill', async (id: string) => docker.getContainer(id).kill()],
    ['docker stop', async (id: string) => docker.getContainer(id).stop({ t: 0 })],
  ])('%s: serves again through the edge within seconds, files intact', async (_what, act) => {
    const id = await containerId()
    const started = performance.now()
    await act(id)
    const { ms, seen } = await untilServed(started)
    // Seconds, not the 30 s safety-net pass. The 2 s figure itself is bench:recovery's (p50 under
    // 1 s on a quiet machine); here the whole suite shares two cores, so the bound is looser.
    expect(ms).toBeLessThan(5_000)
    // While down, the edge answered itself: 503 with Retry-After, at once: well under the 2 s it
    // would take to give up connecting to a dead address (loose: two shared cores under a suite).
    for (const answer of seen.filter((s) => s.status === 503)) {
      expect(answer.retryAfter).toBe('2')
      expect(answer.ms).toBeLessThan(1_000)
    }
    expect(seen.every((s) => s.status === 200 || s.status === 503 || s.status === 502)).toBe(true)
    expect((await api(berth.url, 'GET', `/sites/${slug}/`, { key })).json.data.status).toBe('active')
  }, 30_000)

  it('keeps a site Berth stopped on purpose down: a suspended or deleted site is not brought back', async () => {
    const deleted = await api(berth.url, 'DELETE', `/sites/${slug}/delete/`, { key })
    expect(deleted.status).toBe(200)
    const stoppedAt = Date.now()
    // The deletion stops the container; nothing starts it again.
    for (;;) {
      const info = await docker.getContainer(await containerId()).inspect()
      if (!info.State.Running) break
      if (Date.now() - stoppedAt > 10_000) throw new Error('the container of a deleted site kept running')
      await Bun.sleep(50)
    }
    await Bun.sleep(1_500)
    expect((await docker.getContainer(await containerId()).inspect()).State.Running).toBe(false)
    const page = await viaEdge(berth.url, slug, '/marker.txt')
    expect(page.status).toBe(404)
    const restored = await api(berth.url, 'POST', `/sites/${slug}/restore/`, { key })
    expect(restored.status).toBe(200)
    await untilServed(performance.now(), 15_000)
  }, 60_000)
})
