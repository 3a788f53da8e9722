import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { until } from '../../../test/helpers/until'
import { followContainerEvents } from '../../compose'

// The healer on the recording runtime: events as the engine would send them, and what Berth
// asks of the runtime in answer. The real engine: test/self-healing.e2e.test.ts.
const runtime = new RecordingRuntime()
const h = inProcess({ runtime })
let unfollow: () => void
afterAll(async () => {
  unfollow()
  await h.close()
  runtime.close()
})
beforeAll(() => {
  unfollow = followContainerEvents(h.services)
})

const ensures = (slug: string) => runtime.callsOf('ensureSite', slug).length

describe('SiteHealer', () => {
  it('runs an active site again as soon as its container dies, and the edge says so meanwhile', async () => {
    const { slug, siteId } = await buyInProcess(h, 'svc_starter_monthly', 'heal')
    expect(await h.services.directory.resolve(slug)).toMatchObject({ state: 'serving' })
    const before = ensures(slug)
    runtime.sites.get(slug)!.running = false
    runtime.emit({ action: 'die', slug, siteId, containerId: 'c' })
    // Known down at once: the edge answers "being brought back" without asking the engine.
    const inspections = runtime.callsOf('inspectSite', slug).length
    expect(await h.services.directory.resolve(slug)).toMatchObject({ state: 'recovering' })
    expect(runtime.callsOf('inspectSite', slug).length).toBe(inspections)
    await until(() => ensures(slug) === before + 1 && h.services.runner.isUp(slug))
    expect(await h.services.directory.resolve(slug)).toMatchObject({ state: 'serving' })
    expect(runtime.sites.get(slug)!.running).toBe(true)
  })

  it('brings a removed container back too, once, whatever the number of events', async () => {
    const { slug, siteId } = await buyInProcess(h, 'svc_starter_monthly', 'heal')
    const before = ensures(slug)
    for (const action of ['kill', 'die', 'stop', 'destroy'] as const) runtime.emit({ action, slug, siteId, containerId: 'c' })
    await until(() => h.services.runner.isUp(slug))
    await Bun.sleep(100)
    expect(ensures(slug) - before).toBe(1)
  })

  it('does not react to a signal, an OOM in a child process, or an event of a container since replaced', async () => {
    const { slug, siteId } = await buyInProcess(h, 'svc_starter_monthly', 'heal')
    const before = ensures(slug)
    for (const action of ['kill', 'oom', 'stop'] as const) runtime.emit({ action, slug, siteId, containerId: 'c' })
    runtime.emit({ action: 'die', slug, siteId, containerId: 'an-old-container' })
    await Bun.sleep(100)
    expect(ensures(slug)).toBe(before)
    expect(h.services.runner.isUp(slug)).toBe(true)
  })

  it('leaves a site Berth stopped on purpose down (pending deletion)', async () => {
    const { slug, siteId, key } = await buyInProcess(h, 'svc_starter_monthly', 'heal')
    expect((await h.call('DELETE', `/api/v1/sites/${slug}/delete/`, { key })).status).toBe(200)
    const before = ensures(slug)
    runtime.emit({ action: 'die', slug, siteId, containerId: 'c' })
    await Bun.sleep(100)
    expect(ensures(slug)).toBe(before)
  })

  it('waits longer each time a site dies again right after coming back (a crash loop)', async () => {
    const { slug, siteId } = await buyInProcess(h, 'svc_starter_monthly', 'loop')
    const before = ensures(slug)
    runtime.emit({ action: 'die', slug, siteId, containerId: 'c' })
    await until(() => ensures(slug) === before + 1 && h.services.runner.isUp(slug))
    // Dies again at once: the next run waits 0.5 s instead of hammering the engine.
    runtime.emit({ action: 'die', slug, siteId, containerId: 'c' })
    await Bun.sleep(250)
    expect(ensures(slug)).toBe(before + 1)
    await until(() => ensures(slug) === before + 2, 2_000)
  })
})
