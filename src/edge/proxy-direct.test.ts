import { afterAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../lib/logger'
import { EdgeMetrics } from './metrics'
import { createEdgeProxy } from './proxy'
import type { SiteTarget } from './types'

/**
 * An app site served straight from its web process (issue 39): when that port refuses (the
 * process restarts), the container's front answers; when the web moved to another port, the
 * edge's kept-alive connections to the old one are closed, the busy ones once their answer is done.
 */
const front = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('front') })
const slowOrNot = (req: Request) => (new URL(req.url).pathname === '/slow' ? Bun.sleep(300) : Promise.resolve())
const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req): Promise<Response> => slowOrNot(req).then(() => new Response(`web ${server.port}`)) })
const web = { server }
// A port nothing listens on: a web process that is down.
const down = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: () => new Response('') })
const downPort = down.port!
down.stop(true)

let target: SiteTarget = { siteId: 's', slug: 's', state: 'serving', upstream: { address: '127.0.0.1', port: web.server.port!, fallbackPort: front.port! } }
const edge = createEdgeProxy({ resolve: () => target, metrics: new EdgeMetrics(), log: memoryLogger(), siteUrl: 'http://localhost:8080' })
const listener = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (request, server) => edge.handle(request, server.requestIP(request)!.address) })
afterAll(() => {
  listener.stop(true)
  edge.close()
  web.server.stop(true)
  front.stop(true)
})
const get = (path = '/') => fetch(`http://127.0.0.1:${listener.port}${path}`, { headers: { host: 's.localhost' } }).then((r) => r.text())

describe('the edge straight to an app\'s web process', () => {
  it('answers from the web process, and from the front when the web\'s port refuses', async () => {
    expect(await get()).toBe(`web ${web.server.port}`)
    target = { ...target, upstream: { address: '127.0.0.1', port: downPort, fallbackPort: front.port! } }
    expect(await get()).toBe('front')
    expect(await get()).toBe('front')
  })

  it('closes its connections to a web port it left: idle ones at once, a busy one when its answer is done', async () => {
    target = { ...target, upstream: { address: '127.0.0.1', port: web.server.port!, fallbackPort: front.port! } }
    await Promise.all([get(), get(), get()])
    expect(web.server.pendingRequests).toBe(0)
    const slow = get('/slow')
    await Bun.sleep(100)
    const idleBefore = edge.stats().idleConnections
    expect(idleBefore).toBeGreaterThan(0)
    edge.retireUpstream('127.0.0.1', web.server.port!)
    expect(await slow).toBe(`web ${web.server.port}`)
    await Bun.sleep(50)
    // Only the front's connection from the first test is left idle.
    expect(edge.stats().idleConnections).toBe(1)
  })
})
