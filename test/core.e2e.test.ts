import { afterAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'

/**
 * The compiled binary over real HTTP: the key lifecycle, the registration limit, and durability
 * across a clean restart and a kill -9.
 */
describe('dist/berth end to end', () => {
  const started: Berth[] = []
  afterAll(async () => {
    await Promise.all(started.map((b) => b.dispose()))
  })

  it('runs the key lifecycle, limits registration, and keeps everything across a restart', async () => {
    const berth = await startBerth()
    started.push(berth)
    const { url } = berth

    const reg = await api(url, 'POST', '/auth/register/', { body: { name: 'e2e', email: 'e2e@example.com' } })
    expect(reg.status).toBe(201)
    const admin = reg.json.data.api_key as string

    const who = await api(url, 'GET', '/auth/whoami', { key: admin })
    expect(who.status).toBe(200)
    expect(who.json.data.user).toEqual({ id: reg.json.data.account_id, email: 'e2e@example.com', language: 'en', first_name: null, last_name: null })

    const made = await api(url, 'POST', '/keys/create/', { key: admin, body: { name: 'reader', scopes: ['read'] } })
    expect(made.status).toBe(201)
    const reader = made.json.data

    const forbidden = await api(url, 'POST', '/keys/create/', { key: reader.api_key, body: { scopes: ['read'] } })
    expect(forbidden.status).toBe(403)
    expect(forbidden.json.error.code).toBe('FORBIDDEN')

    const rotated = await api(url, 'POST', `/keys/${reader.key_id}/rotate/`, { key: admin })
    expect(rotated.status).toBe(200)
    expect((await api(url, 'GET', '/auth/whoami/', { key: reader.api_key })).status).toBe(401)
    const fresh = rotated.json.data
    expect((await api(url, 'GET', '/auth/whoami/', { key: fresh.api_key })).status).toBe(200)

    expect((await api(url, 'POST', `/keys/${fresh.key_id}/revoke`, { key: admin })).status).toBe(200)
    expect((await api(url, 'GET', '/auth/whoami/', { key: fresh.api_key })).status).toBe(401)

    // Registrations 2 to 5 pass; the sixth from this address within the hour is refused.
    for (let i = 0; i < 4; i++) expect((await api(url, 'POST', '/auth/register/', { body: {} })).status).toBe(201)
    const sixth = await api(url, 'POST', '/auth/register/', { body: {} })
    expect(sixth.status).toBe(429)
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThan(3500)
    expect(sixth.headers.get('ratelimit-limit')).toBe('5')

    await berth.restart()

    expect((await api(url, 'GET', '/auth/whoami/', { key: admin })).status).toBe(200)
    expect((await api(url, 'GET', '/auth/whoami/', { key: reader.api_key })).status).toBe(401)
    expect((await api(url, 'GET', '/auth/whoami/', { key: fresh.api_key })).status).toBe(401)
    const keys = await api(url, 'GET', '/keys/?include_revoked=true', { key: admin })
    expect(keys.json.data.map((k: { status: string }) => k.status).sort()).toEqual(['active', 'revoked', 'rotated'])
    expect((await api(url, 'POST', '/auth/register/', { body: {} })).status).toBe(429)
    const plans = await api(url, 'GET', '/plans/')
    expect(plans.json.data.length).toBeGreaterThan(3)
    // The query-less list is served by a fast path (src/server.ts): same data, same envelope,
    // a fresh request id, no deprecated plan.
    const plain = await api(url, 'GET', '/plans')
    const filtered = await api(url, 'GET', '/plans/?include_deprecated=false')
    expect(plain.json.data).toEqual(filtered.json.data)
    expect(plain.json.meta.request_id).not.toBe(plans.json.meta.request_id)
    expect(plain.headers.get('x-request-id')).toBe(plain.json.meta.request_id)
    expect(plain.json.data.some((p: { deprecated: boolean }) => p.deprecated)).toBe(false)
  })

  it('loses no acknowledged key when killed with SIGKILL in the middle of a burst of writes', async () => {
    const berth = await startBerth()
    started.push(berth)
    const admin = (await api(berth.url, 'POST', '/auth/register/', { body: {} })).json.data.api_key as string

    const acknowledged: string[] = []
    let killed = false
    const worker = async (w: number) => {
      for (let i = 0; !killed && i < 500; i++) {
        try {
          const res = await api(berth.url, 'POST', '/keys/create/', { key: admin, body: { name: `burst-${w}-${i}`, scopes: ['read'] } })
          if (res.status === 201) acknowledged.push(res.json.data.api_key)
        } catch {
          return // the connection died with the process
        }
      }
    }
    const workers = Array.from({ length: 12 }, (_, w) => worker(w))
    while (acknowledged.length < 60) await Bun.sleep(5)
    await berth.kill9()
    killed = true
    await Promise.all(workers)
    expect(acknowledged.length).toBeGreaterThanOrEqual(60)

    await berth.restart()
    const listed = await api(berth.url, 'GET', '/keys/', { key: admin })
    const prefixes = new Set(listed.json.data.map((k: { prefix: string }) => k.prefix))
    const lost = acknowledged.filter((k) => !prefixes.has(k.slice(0, 12)))
    expect(lost).toEqual([])
    // Spot-check that acknowledged keys authenticate, first and last included.
    for (const key of [acknowledged[0], acknowledged[acknowledged.length - 1], ...acknowledged.slice(1, 10)]) {
      expect((await api(berth.url, 'GET', '/auth/whoami/', { key })).status).toBe(200)
    }
  })
})
