import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { freezeDockerd, restartDockerd } from './helpers/dockerd'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { docker, instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The engine restarts under a running Berth (every container stops with it): Berth notices,
 * whether or not the event stream's end reaches it (a liveness check on a connection of its own),
 * says so on GET /status/, follows the new engine's events within a few seconds of it answering,
 * and the site serves again; afterwards events flow, so a container killed then is back within
 * 2 s (not at the 30 s reconcile pass). Solo tier: it stops every container on the engine, so it
 * runs after the other tiers, alone. To run it without disturbing the machine's engine, start a
 * private dockerd (its own --host, --data-root, --exec-root, --pidfile) in a network namespace,
 * load the site images into it, and run this file inside that namespace with
 * BERTH_CONTAINERS_DOCKER_SOCKET naming its socket (test/helpers/engine.ts).
 */
let berth: Berth
let slug: string
let key: string
const marker = `engine-${Date.now()}`
/** Within this long of the engine answering again, Berth follows its events. */
const FOLLOW_WITHIN_MS = 5_000

beforeAll(async () => {
  berth = await startBerth()
  instanceOf(berth)
  slug = uniqueSlug('engine')
  const { data } = await buyDirect(berth.url, { slug })
  key = data.api_key
  expect(await waitForSite(berth.url, key, slug)).toBe('active')
  expect((await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/marker.txt', content: marker } })).status).toBe(200)
  // Berth follows the engine's events (its watcher starts half a second after it listens).
  const deadline = Date.now() + 10_000
  while ((await api(berth.url, 'GET', '/status/')).json.data.engine.reachable !== true) {
    if (Date.now() > deadline) throw new Error(`Berth does not follow the engine: ${berth.output().slice(-2_000)}`)
    await Bun.sleep(50)
  }
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

/** Berth's log lines about the event stream since `since` (ms since the epoch), in order. */
function streamLines(since: number): string[] {
  return berth.output().split('\n').flatMap((line) => {
    try {
      const { time, msg } = JSON.parse(line) as { time: string; msg: string }
      return Date.parse(time) >= since && /engine event|engine events/.test(msg) ? [msg] : []
    } catch {
      return []
    }
  })
}

/** True once Berth follows the engine's events again after a drop since `since`, with no drop after. */
function followingAgain(since: number): boolean {
  const lines = streamLines(since)
  return lines.lastIndexOf('following the engine events again') > lines.lastIndexOf('the engine event stream ended; reconnecting')
}

/** Reads GET /status/ every 50 ms until stopped; returns each distinct engine.reachable seen. */
function watchStatus(): { stop(): Promise<Set<boolean | null>> } {
  const seen = new Set<boolean | null>()
  let running = true
  const loop = (async () => {
    while (running) {
      const res = await api(berth.url, 'GET', '/status/')
      seen.add(res.json.data.engine.reachable)
      if (res.json.data.engine.reachable === false) expect(res.json.data.status).toBe('degraded')
      await Bun.sleep(50)
    }
  })()
  return { stop: async () => ((running = false), await loop, seen) }
}

describe('an engine restart', () => {
  it('is noticed, the events are followed again within seconds of the engine answering, and the site serves again', async () => {
    expect((await api(berth.url, 'GET', '/status/')).json.data).toMatchObject({ status: 'ok', engine: { reachable: true } })
    const since = Date.now()
    const status = watchStatus()
    const answeredAt = await restartDockerd()
    const deadline = answeredAt + 30_000
    while (!followingAgain(since) && performance.now() < deadline) await Bun.sleep(20)
    const followedAfterMs = performance.now() - answeredAt
    const seen = await status.stop()
    expect(streamLines(since), berth.output().slice(-4_000)).toContain('the engine event stream ended; reconnecting')
    expect(followingAgain(since), berth.output().slice(-4_000)).toBe(true)
    expect(followedAfterMs).toBeLessThan(FOLLOW_WITHIN_MS)
    // While it was down, the status said so.
    expect([...seen]).toContain(false)
    expect((await api(berth.url, 'GET', '/status/')).json.data).toMatchObject({ status: 'ok', engine: { reachable: true } })
    // Back without waiting for the 30 s reconcile pass: the reconnect itself compares everything.
    expect(await servedWithin(15_000)).toBeLessThan(15_000)
    // Events flow from the new engine: a container killed now is back at once.
    const [c] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${slug}`] } })
    await docker.getContainer(c!.Id).kill()
    expect(await servedWithin(2_000)).toBeLessThan(2_000)
  }, 180_000)

  it('is noticed when the engine answers nothing and closes nothing (frozen), and followed again once it answers', async () => {
    const since = Date.now()
    const status = watchStatus()
    // Longer than a liveness check's 2 s wait plus its 3 s for an answer.
    await freezeDockerd(7_000)
    const thawedAt = performance.now()
    while (!followingAgain(since) && performance.now() < thawedAt + 30_000) await Bun.sleep(20)
    const seen = await status.stop()
    const lines = berth.output().split('\n').filter((l) => l.includes('the engine event stream ended') && Date.parse(JSON.parse(l).time) >= since)
    expect(lines.join('\n'), berth.output().slice(-4_000)).toMatch(/liveness check: the engine did not answer within 3000 ms/)
    expect(followingAgain(since)).toBe(true)
    expect(performance.now() - thawedAt).toBeLessThan(FOLLOW_WITHIN_MS)
    expect([...seen]).toContain(false)
    expect((await api(berth.url, 'GET', '/status/')).json.data).toMatchObject({ status: 'ok', engine: { reachable: true } })
    const [c] = await docker.listContainers({ filters: { label: [`dev.berth.instance=${instanceOf(berth)}`, `dev.berth.site-slug=${slug}`] } })
    await docker.getContainer(c!.Id).kill()
    expect(await servedWithin(2_000)).toBeLessThan(2_000)
  }, 120_000)
})
