import { afterAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../lib/logger'
import { EdgeMetrics } from './metrics'
import { createEdgeProxy } from './proxy'

/**
 * A busy site's connections are kept between bursts: more than 64 requests at once (an app
 * site's front keeps 256 idle connections to its app) do not close and reopen the edge's
 * connections to the container on every burst.
 */
const upstream = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => Bun.sleep(30).then(() => new Response('ok')) })
const edge = createEdgeProxy({
  resolve: () => ({ siteId: 'busy', slug: 'busy', state: 'serving', upstream: { address: '127.0.0.1', port: upstream.port! } }),
  metrics: new EdgeMetrics(),
  log: memoryLogger(),
  siteUrl: 'http://localhost:8080',
})
const listener = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request, server) => edge.handle(request, server.requestIP(request)!.address) })
afterAll(() => {
  listener.stop(true)
  edge.close()
  upstream.stop(true)
})
const burst = (n: number) => Promise.all(Array.from({ length: n }, () => fetch(`http://127.0.0.1:${listener.port}/`, { headers: { host: 'busy.localhost' } }).then((r) => r.text())))

describe('the upstream pool under 128 clients', () => {
  it('keeps the connections of one burst for the next', async () => {
    expect(await burst(128)).toEqual(Array(128).fill('ok'))
    const opened = edge.stats().connectionsOpened
    expect(opened).toBeGreaterThan(64)
    expect(edge.stats().idleConnections).toBe(opened)
    await burst(128)
    await burst(128)
    expect(edge.stats().connectionsOpened - opened).toBeLessThanOrEqual(8)
  })
})
