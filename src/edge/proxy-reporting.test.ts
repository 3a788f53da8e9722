import { describe, expect, it } from 'vitest'
import { useEdgeProxy } from '../../test/helpers/edge-proxy'

/**
 * What the edge answers and reports itself, in front of real upstreams on loopback: its log
 * lines, the pages of sites that are not serving, the request records and metrics, and the
 * access log of sites marked for one. Forwarding is in proxy.test.ts.
 */

const proxy = useEdgeProxy()
const { visit, until, recordsOf, records, accessLines, metrics, log } = proxy

describe('logging', () => {
  it('logs failing containers as warnings, at most once per site per interval, and no errors', async () => {
    for (let i = 0; i < 3; i++) await (await visit('down', '/')).text()
    expect(log.lines.filter((l) => l.level === 'error')).toEqual([])
    const warnings = log.lines.filter((l) => l.level === 'warn')
    expect(warnings.some((l) => l.site === 'down' && l.failure === 'unreachable')).toBe(true)
    expect(warnings.filter((l) => l.site === 'down')).toHaveLength(1)
  })
})

describe('sites that are not serving', () => {
  it.each([
    ['setup', 503, 'This site is being set up'],
    ['paused', 503, 'This site is not running'],
    ['broken', 503, 'This site is not available'],
    ['doomed', 404, 'This site has been scheduled for deletion'],
    ['nocontainer', 503, 'This site is being brought back'],
    ['coming-back', 503, 'This site is being brought back'],
  ])('%s answers %i with its page', async (slug, status, text) => {
    const started = performance.now()
    const res = await visit(slug, '/anything')
    // Answered by the edge itself, without trying a container (which would wait for its connect
    // timeout): well under a second, even on a loaded machine (55 ms seen at load average 14).
    expect(performance.now() - started).toBeLessThan(1000)
    expect(res.status).toBe(status)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(await res.text()).toContain(text)
    if (slug === 'setup') expect(res.headers.get('retry-after')).toBe('10')
    if (slug === 'coming-back' || slug === 'nocontainer') expect(res.headers.get('retry-after')).toBe('2')
  })

  it('answers 404 for an unknown host, naming it safely', async () => {
    const res = await visit('nosuchsite', '/')
    expect(res.status).toBe(404)
    expect(await res.text()).toContain('No site at nosuchsite.localhost:8080')
    const edgeDirect = await proxy.edge.handle(new Request('http://x/', { headers: { host: '<b>.localhost' } }), '127.0.0.1')
    expect(await edgeDirect.text()).toContain('No site at &#60;b&#62;.localhost')
  })
})

describe('metrics', () => {
  it('records each request with its status and the body bytes the client got', async () => {
    const calls: [string, number, number][] = [
      ['/size?n=1000', 200, 1000],
      ['/size?n=1000', 200, 1000],
      ['/size?n=200000', 200, 200_000],
      ['/size?n=7&status=301', 301, 7],
      ['/size?n=4&status=404', 404, 4],
      ['/size?n=3&status=500', 500, 3],
      ['/chunked', 200, 18],
    ]
    for (const [path, status, bytes] of calls) {
      const res = await visit('metered', path)
      expect(res.status).toBe(status)
      expect((await res.arrayBuffer()).byteLength).toBe(bytes)
    }
    await until(() => recordsOf('metered').length === calls.length)
    const got = recordsOf('metered')
    expect(got.map((r) => [r.status, r.bytesOut])).toEqual(calls.map(([, s, b]) => [s, b]))
    for (const r of got) {
      expect(r.durationMs).toBeGreaterThan(0)
      expect(Math.abs(r.at - Date.now())).toBeLessThan(60_000)
    }
    const [day] = metrics.snapshot('site_metered')
    expect(day).toMatchObject({ requests: 7, bytesOut: 202_032, status2xx: 4, status3xx: 1, status4xx: 1, status5xx: 1 })
    expect(day!.p95Ms).toBeGreaterThan(0)
  })

  it('counts what was sent when the client goes away mid-body', async () => {
    const before = recordsOf('app').length
    const controller = new AbortController()
    const res = await visit('app', '/endless', { signal: controller.signal })
    const reader = res.body!.getReader()
    let received = 0
    while (received < 1024 * 1024) received += (await reader.read()).value!.length
    controller.abort()
    await until(() => recordsOf('app').length > before)
    const last = recordsOf('app').at(-1)!
    expect(last.status).toBe(200)
    expect(last.bytesOut).toBeGreaterThanOrEqual(received)
  })

  it('records pages of known sites, 502s included, and nothing for unknown hosts', async () => {
    const count = records.length
    await (await visit('setup', '/')).text()
    await (await visit('down', '/')).text()
    await (await visit('nosuchsite', '/')).text()
    const added = records.slice(count)
    expect(added.map((r) => [r.siteId, r.record.status])).toEqual([['site_setup', 503], ['site_down', 502]])
    expect(added[0]!.record.bytesOut).toBeGreaterThan(100)
  })
})

describe('the access log the edge writes', () => {
  it('gets each forwarded request of a site marked for it, with the target as sent (query included), and nothing of other sites', async () => {
    const res = await visit('logged', '/size?n=12&status=404&q=a%20b&x=1', { headers: { referer: 'https://example.com/"x"', 'user-agent': 'probe/1.0' } })
    expect(res.status).toBe(404)
    await res.arrayBuffer()
    await (await visit('app', '/size?n=1')).arrayBuffer()
    await until(() => accessLines.length >= 1)
    await Bun.sleep(50)
    expect(accessLines.map((l) => l.slug)).toEqual(['logged'])
    const { request } = accessLines[0]!
    expect(request).toMatchObject({ method: 'GET', target: '/size?n=12&status=404&q=a%20b&x=1', status: 404, bytesOut: 12, clientAddress: '127.0.0.1', referer: 'https://example.com/"x"', userAgent: 'probe/1.0' })
    expect(Math.abs(request.at - Date.now())).toBeLessThan(60_000)
  })
})
