import { describe, expect, it } from 'vitest'
import { createApp } from '../app'
import { buildApp } from '../../compose/app'
import { loadConfig } from '../../config/config'
import { inProcess } from '../../../test/helpers/in-process'

const register = (h: ReturnType<typeof inProcess>, ip: string) =>
  h.call('POST', '/api/v1/auth/register/', { body: {}, headers: { 'x-forwarded-for': ip } })

describe('rate limits', () => {
  it('allows 5 registrations per address per hour, then 429 with Retry-After and RateLimit headers', async () => {
    const h = inProcess()
    try {
      for (let i = 0; i < 5; i++) {
        const res = await register(h, '198.51.100.7')
        expect(res.status).toBe(201)
        expect(res.headers.get('ratelimit-limit')).toBe('5')
        expect(res.headers.get('ratelimit-remaining')).toBe(String(4 - i))
        expect(res.headers.get('ratelimit-policy')).toBe('5;w=3600')
      }
      const sixth = await register(h, '198.51.100.7')
      expect(sixth.status).toBe(429)
      expect(sixth.json.error.code).toBe('RATE_LIMITED')
      expect(Number(sixth.headers.get('retry-after'))).toBe(3600)
      expect(sixth.headers.get('ratelimit-remaining')).toBe('0')
      const accounts = h.services.store.sqlite.query('SELECT count(*) AS n FROM accounts').get() as { n: number }
      expect(accounts.n).toBe(5)
      // Another address is unaffected.
      expect((await register(h, '198.51.100.8')).status).toBe(201)
      // The window slides: after the hour the first slot frees.
      h.clock.advance(30 * 60_000)
      const still = await register(h, '198.51.100.7')
      expect(still.status).toBe(429)
      expect(Number(still.headers.get('retry-after'))).toBe(1800)
      h.clock.advance(30 * 60_000 + 1)
      expect((await register(h, '198.51.100.7')).status).toBe(201)
    } finally {
      await h.close()
    }
  })

  it('does not count requests that fail validation', async () => {
    const h = inProcess()
    try {
      for (let i = 0; i < 8; i++) {
        expect((await h.call('POST', '/api/v1/auth/register/', { body: { name: 5 }, headers: { 'x-forwarded-for': '203.0.113.9' } })).status).toBe(422)
      }
      expect((await register(h, '203.0.113.9')).status).toBe(201)
    } finally {
      await h.close()
    }
  })

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const h = inProcess({ env: { BERTH_SERVER_TRUSTED_PROXIES: '10.0.0.0/8' } })
    try {
      for (let i = 0; i < 5; i++) expect((await register(h, `192.0.2.${i}`)).status).toBe(201)
      // All five counted against the real peer (127.0.0.1), whatever the header claimed.
      expect((await register(h, '192.0.2.99')).status).toBe(429)
    } finally {
      await h.close()
    }
  })

  it('keeps counters across a restart', async () => {
    const h = inProcess()
    try {
      for (let i = 0; i < 5; i++) expect((await register(h, '198.51.100.50')).status).toBe(201)
      h.services.store.close()
      const config = loadConfig({ env: { BERTH_SERVER_DATA_DIR: h.dir, BERTH_SERVER_TRUSTED_PROXIES: '127.0.0.1' }, file: null })
      const again = createApp(buildApp(config, 'serve', { clock: h.clock }).server)
      const res = await again.handle(new Request('http://localhost/api/v1/auth/register/', { method: 'POST', body: '{}', headers: { 'x-forwarded-for': '198.51.100.50' } }))
      expect(res.status).toBe(429)
    } finally {
      await h.close()
    }
  })
})
