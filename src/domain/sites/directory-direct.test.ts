import { describe, expect, it } from 'vitest'
import type { SiteEndpoint } from '../../drivers/runtime/types'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { SiteDirectory } from './directory'

/**
 * An app site on this box is served straight from its live web process (sites.web_port), its
 * container's front kept as the fallback; a site on a cluster node (reached through its agent's
 * forward, another port than the front's) and a site without a web port keep the front.
 */
const row = (over: Partial<SiteRow> = {}) => ({ id: 'site_1', slug: 'shop', status: 'active', planSlug: 'p', modules: '{}', hstsMaxAge: null, runtime: 'node', webPort: 3001, ...over }) as SiteRow

function setUp(endpoint: SiteEndpoint) {
  const state = { version: 1, row: row(), moved: [] as string[] }
  const directory = new SiteDirectory({
    store: { versionOf: () => () => state.version } as unknown as Store,
    sites: { findLiveBySlug: () => state.row, find: () => undefined },
    runner: { knownEndpoint: () => endpoint, endpointOf: async () => endpoint },
    domains: { linked: () => [] },
    edgeLogs: () => false,
    frontPort: 8080,
  })
  directory.onUpstreamMoved((address, port) => state.moved.push(`${address}:${port}`))
  return { state, directory }
}

const local: SiteEndpoint = { containerId: 'c1', address: '10.0.0.2', port: 8080 }

describe('SiteDirectory: the direct path of app sites', () => {
  it('sends an app site on this box to its web process, the front as fallback, and has the edge write its access log', () => {
    const { directory } = setUp(local)
    expect(directory.resolve('shop')).toEqual({ siteId: 'site_1', slug: 'shop', state: 'serving', upstream: { address: '10.0.0.2', port: 3001, fallbackPort: 8080 }, accessLog: true })
  })

  it('keeps the front for a site without a web port and for one on a cluster node', () => {
    const front = setUp(local)
    front.state.row = row({ webPort: null })
    expect(front.directory.resolve('shop')).toEqual({ siteId: 'site_1', slug: 'shop', state: 'serving', upstream: { address: '10.0.0.2', port: 8080 } })
    const node = setUp({ containerId: 'c1', address: '192.0.2.7', port: 41022 })
    expect(node.directory.resolve('shop')).toEqual({ siteId: 'site_1', slug: 'shop', state: 'serving', upstream: { address: '192.0.2.7', port: 41022 } })
  })

  it('follows a new web port at the next request after the store changed, and tells the edge the old one is gone', () => {
    const { state, directory } = setUp(local)
    expect(directory.resolve('shop')).toMatchObject({ upstream: { port: 3001 } })
    expect(state.moved).toEqual([])
    state.row = row({ webPort: 3002 })
    state.version++
    expect(directory.resolve('shop')).toMatchObject({ upstream: { port: 3002 } })
    expect(state.moved).toEqual(['10.0.0.2:3001'])
    expect(directory.resolve('shop')).toMatchObject({ upstream: { port: 3002 } })
    expect(state.moved).toEqual(['10.0.0.2:3001'])
  })
})
