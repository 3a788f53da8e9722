import { afterAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../lib/logger'
import { EdgeMetrics } from './metrics'
import { createEdgeProxy } from './proxy'
import type { SiteTarget } from './types'

/**
 * Each request to a known site is begun once and recorded once, whichever way it is answered
 * (the edge's page, a module's own answer, the container or its failure page), so the requests
 * in flight for /metrics come back to zero. Port 9 on loopback: nothing listens (a refused connect).
 */
const metrics = new EdgeMetrics()
const flags = { seo: true, chatbot: false, translation: false }
const sites: Record<string, SiteTarget> = {
  paused: { siteId: 'paused', slug: 'paused', state: 'stopped' },
  answered: { siteId: 'answered', slug: 'answered', state: 'serving', upstream: { address: '127.0.0.1', port: 9 }, modules: flags },
  forwarded: { siteId: 'forwarded', slug: 'forwarded', state: 'serving', upstream: { address: '127.0.0.1', port: 9 }, modules: flags },
}
const edge = createEdgeProxy({
  resolve: (host) => sites[host.split('.')[0]!] ?? null,
  metrics,
  log: memoryLogger(),
  siteUrl: 'http://localhost:8080',
  // The module answers /robots.txt itself and sends everything else on, as the SEO module does.
  modules: (request, _site, _flags, _client, forward) =>
    new URL(request.url).pathname === '/robots.txt' ? Promise.resolve(new Response('User-agent: *\n', { headers: { 'content-length': '14' } })) : forward(request),
})
afterAll(() => edge.close())

const visit = (slug: string, path: string, init: { method?: string; body?: string } = {}) => {
  const length: Record<string, string> = init.body === undefined ? {} : { 'content-length': String(init.body.length) }
  return edge.handle(new Request(`http://${slug}.localhost${path}`, { ...init, headers: { host: `${slug}.localhost`, ...length } }), '127.0.0.1')
}
const totals = (siteId: string) => [...metrics.allTotals()].find((t) => t.siteId === siteId)!

describe('requests in flight and totals at the edge', () => {
  it('counts every way of answering once, and returns to zero in flight', async () => {
    expect((await visit('paused', '/')).status).toBe(503)
    const robots = await visit('answered', '/robots.txt')
    expect(await robots.text()).toBe('User-agent: *\n')
    expect((await visit('forwarded', '/', { method: 'POST', body: 'x'.repeat(300) })).status).toBe(502)
    expect((await visit('nobody', '/')).status).toBe(404)
    expect(metrics.inFlight()).toBe(0)
    expect(totals('paused').byClass).toEqual([0, 0, 0, 0, 1])
    expect([totals('answered').byClass, totals('answered').bytesOut]).toEqual([[0, 1, 0, 0, 0], 14])
    expect([totals('forwarded').byClass, totals('forwarded').bytesIn]).toEqual([[0, 0, 0, 0, 1], 300])
    expect([...metrics.allTotals()].map((t) => t.siteId).sort()).toEqual(['answered', 'forwarded', 'paused'])
  })
})
