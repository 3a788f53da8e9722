import { describe, expect, it } from 'vitest'
import type { SiteEndpoint } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { SiteDirectory } from './directory'

/** A site row with what the directory reads; the rest of the row does not matter here. */
const row = (over: Partial<SiteRow> = {}) => ({ id: 'site_1', slug: 'shop', status: 'active', planSlug: 'p', modules: '{}', hstsMaxAge: null, ...over }) as SiteRow

/** The directory over in-memory stand-ins for the store, the sites table and the runner. */
function setUp() {
  const state = { version: 1, rows: new Map([['shop', row()]]), endpoints: new Map<string, SiteEndpoint | null>(), engine: new Map<string, SiteEndpoint>(), engineCalls: 0 }
  const directory = new SiteDirectory({
    store: { versionOf: () => () => state.version } as unknown as Store,
    sites: { findLiveBySlug: (slug: string) => state.rows.get(slug), find: () => undefined },
    runner: {
      knownEndpoint: (slug: string) => state.endpoints.get(slug),
      endpointOf: async (slug: string) => {
        state.engineCalls++
        const found = state.engine.get(slug) ?? null
        state.endpoints.set(slug, found)
        return found
      },
    },
    domains: { linked: () => [] },
    modules: (site) => (site.modules === '{}' ? undefined : { seo: true, chatbot: false, translation: false }),
  })
  return { state, directory }
}

const first: SiteEndpoint = { containerId: 'c1', address: '10.0.0.2', port: 8080 }

describe('SiteDirectory.resolve', () => {
  it('asks the engine once after a start, then answers without a promise', async () => {
    const { state, directory } = setUp()
    state.engine.set('shop', first)
    const asked = directory.resolve('shop')
    expect(asked).toBeInstanceOf(Promise)
    expect(await asked).toMatchObject({ state: 'serving', upstream: { address: '10.0.0.2', port: 8080 } })
    const again = directory.resolve('shop')
    expect(again).not.toBeInstanceOf(Promise)
    expect(again).toMatchObject({ siteId: 'site_1', slug: 'shop', state: 'serving', upstream: { address: '10.0.0.2', port: 8080 } })
    expect(directory.resolve('shop')).toBe(again)
    expect(state.engineCalls).toBe(1)
  })

  it('follows the container to a new address as soon as the runner knows it', () => {
    const { state, directory } = setUp()
    state.endpoints.set('shop', first)
    expect(directory.resolve('shop')).toMatchObject({ upstream: { address: '10.0.0.2' } })
    state.endpoints.set('shop', { containerId: 'c2', address: '10.0.0.9', port: 8080 })
    expect(directory.resolve('shop')).toMatchObject({ upstream: { address: '10.0.0.9' } })
  })

  it('answers recovering without asking the engine while the container is known down', () => {
    const { state, directory } = setUp()
    state.endpoints.set('shop', null)
    expect(directory.resolve('shop')).toEqual({ siteId: 'site_1', slug: 'shop', state: 'recovering' })
    expect(state.engineCalls).toBe(0)
  })

  it('sees a change written to the store (modules turned on, the site suspended, deleted)', () => {
    const { state, directory } = setUp()
    state.endpoints.set('shop', first)
    expect(directory.resolve('shop')).not.toHaveProperty('modules')
    state.rows.set('shop', row({ modules: '{"seo":true}' }))
    state.version++
    expect(directory.resolve('shop')).toMatchObject({ state: 'serving', modules: { seo: true } })
    state.rows.set('shop', row({ status: 'suspended' }))
    state.version++
    expect(directory.resolve('shop')).toEqual({ siteId: 'site_1', slug: 'shop', state: 'suspended' })
    state.rows.delete('shop')
    state.version++
    expect(directory.resolve('shop')).toBeNull()
  })

  it("carries the owner's HSTS setting to the edge, serving or not; none when null", () => {
    const { state, directory } = setUp()
    state.endpoints.set('shop', first)
    expect(directory.resolve('shop')).not.toHaveProperty('hsts')
    state.rows.set('shop', row({ hstsMaxAge: 31536000 }))
    state.version++
    expect(directory.resolve('shop')).toMatchObject({ state: 'serving', hsts: 'max-age=31536000' })
    state.rows.set('shop', row({ hstsMaxAge: 0, status: 'suspended' }))
    state.version++
    expect(directory.resolve('shop')).toEqual({ siteId: 'site_1', slug: 'shop', state: 'suspended', hsts: 'max-age=0' })
  })
})
