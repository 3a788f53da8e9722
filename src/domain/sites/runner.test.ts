import { afterAll, describe, expect, it } from 'vitest'
import { domainStore } from '../../../test/helpers/domain-store'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { HostPortTakenError, RuntimeUnavailableError } from '../../drivers/runtime/types'
import { SitesRepository } from './repository'
import { waitForAnswer } from '../../drivers/runtime/first-answer'
import { SiteRunner } from './runner'

/**
 * What the runner asks of the container runtime for a site, and what it then knows without
 * asking: on a real SQLite store (sites and their SSH ports) and the recording runtime, whose
 * "containers" are one real HTTP server on 127.0.0.1.
 */
const runtime = new RecordingRuntime()
afterAll(() => runtime.close())
const IMAGES = { shared: 'berth/static:1', vps: 'berth/php:1', dedicated: 'berth/php:1' }

function setup() {
  const t = domainStore()
  const sites = new SitesRepository(t.store, { planHasSsh: (plan) => t.plans.get(plan).features.ssh, range: { first: 2200, last: 2210 }, isFree: () => true })
  const runner = new SiteRunner({ sites, plans: t.plans, runtime, containers: { images: IMAGES, appImage: 'berth/app:1', pidsLimit: 512 }, log: t.log, waitForAnswer })
  const accountId = t.account()
  function site(planSlug = 'starter') {
    const slug = `r${Math.random().toString(36).slice(2, 10)}`
    return sites.insert({ id: crypto.randomUUID(), accountId, subscriptionId: null, slug, planSlug, createdAt: t.clock.now() })
  }
  const calls = (op: Parameters<RecordingRuntime['callsOf']>[0], slug: string) => runtime.callsOf(op, slug).length
  return { ...t, sites, runner, site, calls }
}

/** Replaces one runtime method for the length of `fn`. */
async function withRuntime<K extends keyof RecordingRuntime>(key: K, impl: RecordingRuntime[K], fn: () => Promise<void>): Promise<void> {
  const saved = runtime[key]
  runtime[key] = impl
  try {
    await fn()
  } finally {
    runtime[key] = saved
  }
}

describe('the spec a site runs with', () => {
  it('takes the image of its plan’s hosting type, its plan’s limits and the process limit', () => {
    const t = setup()
    const shared = t.site('starter')
    expect(t.runner.spec(shared)).toEqual({
      siteId: shared.id, slug: shared.slug, hostingType: 'shared', image: 'berth/static:1', memoryMb: 256, cpuCores: 1, pidsLimit: 512, diskGb: 5, sshPort: null,
    })
    expect(t.runner.spec(t.site('performance'))).toMatchObject({ hostingType: 'dedicated', image: 'berth/php:1', memoryMb: 4096, cpuCores: 2, diskGb: 80 })
  })

  it('publishes the site’s SSH port only when its plan has SSH', () => {
    const t = setup()
    const vps = t.site('business')
    expect(vps.sshPort).toBe(2200)
    expect(t.runner.spec(vps).sshPort).toBe(2200)
    // A port left on a site whose plan has no SSH (moved down) is not published.
    expect(t.runner.spec({ ...t.site('starter'), sshPort: 2205 }).sshPort).toBeNull()
  })
})

describe('running a site', () => {
  it('runs the site as the store holds it now: a row read before it moved to the app image does not put the old image back', async () => {
    const { runner, site, sites, clock } = setup()
    const stale = site()
    sites.setApp(stale.id, { runtime: 'node', live: null }, clock.now())
    await runner.run(stale)
    const [call] = runtime.callsOf('ensureSite', stale.slug) as { spec: { image: string } }[]
    expect(call!.spec.image).toBe('berth/app:1')
  })

  it('ensures the container with its spec and then knows where it answers without asking the engine', async () => {
    const t = setup()
    const s = t.site('business')
    expect(t.runner.knownEndpoint(s.slug)).toBeUndefined()
    const endpoint = await t.runner.run(s, { waitForAnswer: true })
    expect(runtime.callsOf('ensureSite', s.slug)).toEqual([{ op: 'ensureSite', slug: s.slug, spec: t.runner.spec(s) }])
    expect(t.runner.isUp(s.slug)).toBe(true)
    expect(t.runner.knownEndpoint(s.slug)).toEqual(endpoint)
    expect(await t.runner.endpointOf(s.slug)).toEqual(endpoint)
    expect(t.calls('inspectSite', s.slug)).toBe(0)
    // Running it again is the runtime's idempotent ensure: one more call, the same answer.
    expect(await t.runner.run(s)).toEqual(endpoint)
  })

  it('moves a site whose SSH port is taken on the host to another port, and the next run uses it', async () => {
    const t = setup()
    const s = t.site('business')
    await withRuntime('ensureSite', async (spec) => {
      throw new HostPortTakenError(spec.sshPort!, `port ${spec.sshPort} is taken`)
    }, async () => {
      await expect(t.runner.run(s)).rejects.toBeInstanceOf(HostPortTakenError)
    })
    expect(t.runner.isUp(s.slug)).toBe(false)
    const moved = t.sites.find(s.id)!
    expect(moved.sshPort).toBe(2201)
    expect(t.logged('the SSH port of a site is taken on this machine; it moves to another')).toBe(true)
    await t.runner.run(moved)
    expect((runtime.callsOf('ensureSite', s.slug).at(-1) as { spec: { sshPort: number } }).spec.sshPort).toBe(2201)
  })

  it('any other failure leaves the port as it is and the site not known up', async () => {
    const t = setup()
    const s = t.site('business')
    await withRuntime('ensureSite', async () => {
      throw new RuntimeUnavailableError('engine down')
    }, async () => {
      await expect(t.runner.run(s)).rejects.toBeInstanceOf(RuntimeUnavailableError)
    })
    expect(t.sites.find(s.id)!.sshPort).toBe(2200)
    expect(t.runner.knownEndpoint(s.slug)).toBeUndefined()
  })

  it('waits for the web server to answer, and says so when it never does', async () => {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('', { status: 500 }) })
    const endpoint = { containerId: 'c', address: '127.0.0.1', port: server.port! }
    await expect(waitForAnswer(endpoint, 2_000)).resolves.toBeUndefined()
    await server.stop(true)
    await expect(waitForAnswer(endpoint, 200)).rejects.toThrow(/did not answer within 0.2 s/)
  })

  it('settled waits for every run of the site under way', async () => {
    const t = setup()
    const s = t.site()
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    let settled = false
    await withRuntime('ensureSite', async (spec) => {
      await gate
      return RecordingRuntime.prototype.ensureSite.call(runtime, spec)
    }, async () => {
      const runs = [t.runner.run(s), t.runner.run(s)]
      const waiting = t.runner.settled(s.slug).then(() => void (settled = true))
      await Bun.sleep(20)
      expect(settled).toBe(false)
      release()
      await Promise.all([...runs, waiting])
      expect(settled).toBe(true)
    })
    await t.runner.settled('never-ran')
  })
})

describe('down, up and asking the engine', () => {
  it('stop and remove ask the runtime and mark the site down at once; the edge then gets null without an engine call', async () => {
    const t = setup()
    const s = t.site()
    await t.runner.run(s)
    await t.runner.stop(s.slug)
    expect(runtime.callsOf('stopSite', s.slug)).toHaveLength(1)
    expect(t.runner.isUp(s.slug)).toBe(false)
    expect(await t.runner.endpointOf(s.slug)).toBeNull()
    expect(t.calls('inspectSite', s.slug)).toBe(0)
    await t.runner.run(s)
    await t.runner.remove(s.slug, { volume: false })
    expect(runtime.callsOf('removeSite', s.slug)).toEqual([{ op: 'removeSite', slug: s.slug, volume: false }])
    expect(t.runner.knownEndpoint(s.slug)).toBeNull()
  })

  it('an event of a container since replaced is ignored; one of the current container marks the site down', async () => {
    const t = setup()
    const s = t.site()
    const endpoint = await t.runner.run(s)
    expect(t.runner.markDown(s.slug, 'an-old-container')).toBe(false)
    expect(t.runner.isUp(s.slug)).toBe(true)
    expect(t.runner.markDown(s.slug, endpoint.containerId)).toBe(true)
    expect(t.runner.knownEndpoint(s.slug)).toBeNull()
  })

  it('a site started behind Berth’s back is looked up again, unless a run of it is under way', async () => {
    const t = setup()
    const s = t.site()
    await t.runner.run(s)
    t.runner.markDown(s.slug)
    t.runner.markStarted(s.slug)
    expect(t.runner.knownEndpoint(s.slug)).toBeUndefined()
    expect(await t.runner.endpointOf(s.slug)).toMatchObject({ address: '127.0.0.1' })
    expect(t.calls('inspectSite', s.slug)).toBe(1)
    // During a run, its own start event changes nothing: the run records the endpoint.
    t.runner.markDown(s.slug)
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    await withRuntime('ensureSite', async (spec) => {
      await gate
      return RecordingRuntime.prototype.ensureSite.call(runtime, spec)
    }, async () => {
      const run = t.runner.run(s)
      t.runner.markStarted(s.slug)
      expect(t.runner.knownEndpoint(s.slug)).toBeNull()
      release()
      await run
    })
    expect(t.runner.isUp(s.slug)).toBe(true)
  })

  it('asks the engine once about a site not seen since start: running, not running (then known down), or no answer (asked again)', async () => {
    const t = setup()
    const running = t.site()
    await runtime.ensureSite(t.runner.spec(running))
    expect(await t.runner.endpointOf(running.slug)).toMatchObject({ address: '127.0.0.1' })
    expect(await t.runner.endpointOf(running.slug)).toMatchObject({ address: '127.0.0.1' })
    expect(t.calls('inspectSite', running.slug)).toBe(1)

    const stopped = t.site()
    await runtime.ensureSite(t.runner.spec(stopped))
    await runtime.stopSite(stopped.slug)
    expect(await t.runner.endpointOf(stopped.slug)).toBeNull()
    expect(await t.runner.endpointOf(stopped.slug)).toBeNull()
    expect(t.calls('inspectSite', stopped.slug)).toBe(1)

    const unknown = t.site()
    let asked = 0
    await withRuntime('inspectSite', async () => {
      asked++
      throw new RuntimeUnavailableError('engine down')
    }, async () => {
      expect(await t.runner.endpointOf(unknown.slug)).toBeNull()
      expect(await t.runner.endpointOf(unknown.slug)).toBeNull()
    })
    expect(asked).toBe(2)
  })

  it('prepares and releases a reserved site in the background; a failure is logged, never thrown', async () => {
    const t = setup()
    const s = t.site()
    t.runner.prepare(s)
    expect(runtime.callsOf('prepareSite', s.slug)).toHaveLength(1)
    t.runner.release(s.slug)
    await Bun.sleep(0)
    expect(runtime.callsOf('removeSite', s.slug)).toEqual([{ op: 'removeSite', slug: s.slug, volume: true }])
    await withRuntime('prepareSite', async () => {
      throw new RuntimeUnavailableError('engine down')
    }, async () => {
      t.runner.prepare(s)
      await Bun.sleep(0)
    })
    expect(t.logged('could not prepare a reserved site')).toBe(true)
  })
})
