import { describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { isMetricsPath, metricsHandler } from './handler'

const TOKEN = 'a-token-of-thirty-two-characters!'
const log = memoryLogger()
const get = (headers: Record<string, string> = {}, method = 'GET') => new Request('http://berth.test/metrics', { method, headers })

describe('GET /metrics', () => {
  it('answers the exposition only to a request bearing metrics.token; others get 401 with WWW-Authenticate', async () => {
    const handle = metricsHandler({ token: TOKEN, scrape: async () => 'up 1\n', log })
    const ok = await handle(get({ authorization: `Bearer ${TOKEN}` }))
    expect(ok.status).toBe(200)
    expect(ok.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(await ok.text()).toBe('up 1\n')
    expect((await handle(get({ authorization: `bearer ${TOKEN} ` }))).status).toBe(200)
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, `Basic ${btoa(`prometheus:${TOKEN}`)}`, 'Bearer ', TOKEN]) {
      const res = await handle(get(authorization === undefined ? {} : { authorization }))
      expect(res.status, authorization).toBe(401)
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="berth metrics"')
      expect(await res.text()).not.toContain('up 1')
    }
  })

  it('asks no token on the separate listener; refuses other methods; a failed scrape is a 500 without details', async () => {
    expect((await metricsHandler({ token: null, scrape: async () => 'up 1\n', log })(get())).status).toBe(200)
    const post = await metricsHandler({ token: null, scrape: async () => '', log })(get({}, 'POST'))
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
    const failing = await metricsHandler({ token: null, scrape: async () => { throw new Error('disk I/O error at /var/lib/berth') }, log })(get())
    expect(failing.status).toBe(500)
    expect(await failing.text()).not.toContain('/var/lib')
  })

  it('matches /metrics with or without a query, nothing longer', () => {
    expect(['/metrics', '/metrics?x=1'].map(isMetricsPath)).toEqual([true, true])
    expect(['/metrics/', '/metricsx', '/api/metrics'].map(isMetricsPath)).toEqual([false, false, false])
  })
})
