import { describe, expect, it } from 'vitest'
import { domainStore } from '../../../test/helpers/domain-store'
import type { SiteRow } from '../../store/schema'
import { EventLog } from '../events'
import { AppCrashWatch } from './crash-watch'
import type { AppProcessState } from './ports'

/**
 * app.crashing / app.recovered (issue 41): what each round of the supervisors' answers changed is
 * recorded on a real store; a crash-looping web also makes the site down, and up again.
 */
function setup() {
  const t = domainStore()
  const accountId = t.account(null)
  const site = { id: 'site-1', slug: 'shop', accountId, status: 'active', runtime: 'node' } as SiteRow
  const log = new EventLog({ store: t.store, clock: t.clock, log: t.log })
  let processes: AppProcessState[] = []
  const downs: string[] = []
  const watch = new AppCrashWatch({
    store: t.store, sites: { listWithStatus: () => [site] }, supervisor: { status: async () => ({ release: 'r', runtime: 'node', env: true, processes }) },
    events: log, log: t.log,
    site: {
      down: (s, reason) => void (downs.push(`down ${s.slug}`), log.record({ type: 'site.down', accountId, siteId: s.id, siteSlug: s.slug, data: { reason } })),
      up: (s) => void (downs.push(`up ${s.slug}`), log.record({ type: 'site.up', accountId, siteId: s.id, siteSlug: s.slug, data: {} })),
    },
  })
  const set = (states: Record<string, AppProcessState['state']>) => {
    processes = Object.entries(states).map(([name, state]) => ({ name, state, pid: 1, restarts: 3, last_exit_code: 1, since: '2026-11-01T00:00:00.000Z' }))
  }
  const types = () => log.list({ accountId, limit: 100 }).map((e) => e.type)
  const data = () => log.list({ accountId, limit: 100 }).map((e) => JSON.parse(e.data))
  return { watch, set, types, data, downs }
}

describe('AppCrashWatch', () => {
  it('records app.crashing once per loop and app.recovered when the process runs again', async () => {
    const t = setup()
    t.set({ web: 'running', worker: 'running' })
    await t.watch.tick()
    expect(t.types()).toEqual([])
    t.set({ web: 'running', worker: 'crashing' })
    await t.watch.tick()
    // Still in its loop across restarts (backoff, starting, crashing again): told once.
    for (const state of ['backoff', 'starting', 'crashing'] as const) {
      t.set({ web: 'running', worker: state })
      await t.watch.tick()
    }
    t.set({ web: 'running', worker: 'running' })
    await t.watch.tick()
    expect(t.types()).toEqual(['app.crashing', 'app.recovered'])
    expect(t.data()[0]).toMatchObject({ process: { name: 'worker', state: 'crashing', last_exit_code: 1 }, processes: [{ name: 'web' }, { name: 'worker' }] })
    expect(t.downs).toEqual([])
  })

  it('a crash-looping web makes the site down with it, and up when it runs again', async () => {
    const t = setup()
    t.set({ web: 'crashing' })
    await t.watch.tick()
    t.set({ web: 'running' })
    await t.watch.tick()
    expect(t.types()).toEqual(['app.crashing', 'site.down', 'app.recovered', 'site.up'])
  })

  it('a process that stops or leaves the release is forgotten without an event', async () => {
    const t = setup()
    t.set({ web: 'running', worker: 'crashing' })
    await t.watch.tick()
    t.set({ web: 'running' })
    await t.watch.tick()
    t.set({ web: 'running', worker: 'running' })
    await t.watch.tick()
    expect(t.types()).toEqual(['app.crashing'])
  })
})
