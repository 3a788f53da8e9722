import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'

const h = inProcess()
afterAll(() => h.close())

const KEY = /^svc_[0-9a-f]{48}$/

describe('register and whoami', () => {
  it('registers an account with a read, write, admin key shown once', async () => {
    const res = await h.call('POST', '/api/v1/auth/register/', { body: { name: 'Crawler', email: 'Bot@Example.com' }, headers: { 'x-forwarded-for': '192.0.2.10' } })
    expect(res.status).toBe(201)
    const d = res.json.data
    expect(d.api_key).toMatch(KEY)
    expect(d.prefix).toBe(d.api_key.slice(0, 12))
    expect(d.scopes).toEqual(['read', 'write', 'admin'])
    expect(d.name).toBe('Crawler')
    const who = await h.call('GET', '/api/v1/auth/whoami/', { key: d.api_key })
    expect(who.status).toBe(200)
    expect(who.json.data).toEqual({
      user: { id: d.account_id, email: 'bot@example.com', language: 'en', first_name: null, last_name: null },
      api_key: { id: d.key_id, scopes: ['read', 'write', 'admin'], site_scoped: false, site_slug: null },
      account: { sites: 0, active_subscriptions: 0 },
    })
  })

  it('defaults the key name and needs no email', async () => {
    const res = await h.call('POST', '/api/v1/auth/register/', { headers: { 'x-forwarded-for': '192.0.2.11' } })
    expect(res.status).toBe(201)
    expect(res.json.data.name).toBe('Agent Key')
  })

  it('stores only a hash of the key', async () => {
    const { key } = await h.register()
    const rows = h.services.store.sqlite.query('SELECT * FROM api_keys').all() as Record<string, unknown>[]
    const dump = JSON.stringify(rows)
    expect(dump).not.toContain(key)
    expect(dump).not.toContain(key.slice(12))
    expect(rows.some((r) => r.key_hash === new Bun.CryptoHasher('sha256').update(key).digest('hex'))).toBe(true)
  })

  it('answers 401 UNAUTHORIZED without a valid key', async () => {
    for (const authorization of [undefined, 'Bearer', `Bearer svc_${'0'.repeat(48)}`, 'Basic dXNlcjpwYXNz']) {
      const res = await h.call('GET', '/api/v1/auth/whoami/', { headers: authorization ? { authorization } : {} })
      expect(res.status).toBe(401)
      expect(res.json.error.code).toBe('UNAUTHORIZED')
      expect(res.headers.get('www-authenticate')).toBe('Bearer')
    }
  })
})

describe('key lifecycle', () => {
  it('creates a key with fewer scopes, which then gets 403 on admin routes', async () => {
    const { key } = await h.register()
    const created = await h.call('POST', '/api/v1/keys/create/', { key, body: { name: 'reader', scopes: ['read'] } })
    expect(created.status).toBe(201)
    expect(created.json.data).toMatchObject({ name: 'reader', scopes: ['read'], site_scoped: false })
    const reader = created.json.data.api_key
    expect((await h.call('GET', '/api/v1/keys/', { key: reader })).status).toBe(200)
    const denied = await h.call('POST', '/api/v1/keys/create/', { key: reader, body: { scopes: ['read'] } })
    expect(denied.status).toBe(403)
    expect(denied.json.error.code).toBe('FORBIDDEN')
    expect(denied.json.error.message).toContain('admin')
  })

  it('refuses to grant scopes the caller lacks', async () => {
    const { key } = await h.register()
    const adminOnly = (await h.call('POST', '/api/v1/keys/create/', { key, body: { scopes: ['admin'] } })).json.data.api_key
    const res = await h.call('POST', '/api/v1/keys/create/', { key: adminOnly, body: { scopes: ['read', 'admin'] } })
    expect(res.status).toBe(403)
    expect(res.json.error.param).toBe('scopes')
    const same = await h.call('POST', '/api/v1/keys/create/', { key: adminOnly, body: {} })
    expect(same.status).toBe(201)
    expect(same.json.data.scopes).toEqual(['admin'])
  })

  it('lists prefixes only, never keys or hashes', async () => {
    const { key } = await h.register()
    await h.call('POST', '/api/v1/keys/create/', { key, body: { name: 'second', scopes: ['read', 'write'] } })
    const res = await h.call('GET', '/api/v1/keys/', { key })
    expect(res.json.data.map((k: { name: string }) => k.name)).toEqual(['Agent Key', 'second'])
    expect(res.text).not.toMatch(/svc_[0-9a-f]{48}/)
    expect(res.text).not.toMatch(/[0-9a-f]{64}/)
    expect(res.json.data[0]).toMatchObject({ prefix: key.slice(0, 12), status: 'active', revoked_at: null })
  })

  it('rotates: the old key fails on its very next request, the new one works, name and scopes kept', async () => {
    const { key } = await h.register()
    const made = (await h.call('POST', '/api/v1/keys/create/', { key, body: { name: 'deployer', scopes: ['read', 'write'] } })).json.data
    expect((await h.call('GET', '/api/v1/auth/whoami/', { key: made.api_key })).status).toBe(200)
    const rotated = await h.call('POST', `/api/v1/keys/${made.key_id}/rotate/`, { key })
    expect(rotated.status).toBe(200)
    expect(rotated.json.data).toMatchObject({ name: 'deployer', scopes: ['read', 'write'] })
    expect(rotated.json.data.api_key).not.toBe(made.api_key)
    const old = await h.call('GET', '/api/v1/auth/whoami/', { key: made.api_key })
    expect(old.status).toBe(401)
    expect(old.json.error.message).toContain('rotated')
    expect((await h.call('GET', '/api/v1/auth/whoami/', { key: rotated.json.data.api_key })).status).toBe(200)
    const again = await h.call('POST', `/api/v1/keys/${made.key_id}/rotate/`, { key })
    expect(again.status).toBe(409)
    expect(again.json.error.code).toBe('CONFLICT')
  })

  it('a key can rotate itself and carry on with the new one', async () => {
    const { key, keyId } = await h.register()
    const res = await h.call('POST', `/api/v1/keys/${keyId}/rotate/`, { key })
    expect(res.status).toBe(200)
    expect((await h.call('GET', '/api/v1/keys/', { key })).status).toBe(401)
    expect((await h.call('GET', '/api/v1/keys/', { key: res.json.data.api_key })).status).toBe(200)
  })

  it('revokes: 401 on the next request, idempotent, hidden from the default listing', async () => {
    const { key } = await h.register()
    const made = (await h.call('POST', '/api/v1/keys/create/', { key, body: { name: 'temp' } })).json.data
    const res = await h.call('POST', `/api/v1/keys/${made.key_id}/revoke/`, { key })
    expect(res.status).toBe(200)
    expect(res.json.data).toMatchObject({ key_id: made.key_id, status: 'revoked' })
    expect((await h.call('GET', '/api/v1/auth/whoami/', { key: made.api_key })).status).toBe(401)
    expect((await h.call('POST', `/api/v1/keys/${made.key_id}/revoke/`, { key })).status).toBe(200)
    const listed = (await h.call('GET', '/api/v1/keys/', { key })).json.data
    expect(listed.map((k: { key_id: string }) => k.key_id)).not.toContain(made.key_id)
    const all = (await h.call('GET', '/api/v1/keys/?include_revoked=true', { key })).json.data
    expect(all.find((k: { key_id: string }) => k.key_id === made.key_id).status).toBe('revoked')
  })

  it("answers 404, never 403, for another account's key", async () => {
    const alice = await h.register()
    const bob = await h.register()
    for (const action of ['revoke', 'rotate']) {
      const res = await h.call('POST', `/api/v1/keys/${bob.keyId}/${action}/`, { key: alice.key })
      expect(res.status).toBe(404)
      expect(res.json.error.code).toBe('NOT_FOUND')
    }
    expect((await h.call('GET', '/api/v1/auth/whoami/', { key: bob.key })).status).toBe(200)
  })

  it('records when a key was last used', async () => {
    const { key } = await h.register()
    await h.call('GET', '/api/v1/auth/whoami/', { key })
    h.services.keys.flushLastUsed()
    const listed = (await h.call('GET', '/api/v1/keys/', { key })).json.data
    expect(listed[0].last_used_at).toBe(new Date(h.clock.now()).toISOString())
  })
})

describe('plans', () => {
  it('lists the seeded catalog without deprecated plans by default', async () => {
    const res = await h.call('GET', '/api/v1/plans/')
    const slugs = res.json.data.map((p: { slug: string }) => p.slug)
    expect(slugs).toContain('starter')
    expect(slugs).not.toContain('legacy-basic')
    expect(new Set(res.json.data.map((p: { track: string }) => p.track))).toEqual(new Set(['single_site', 'agency']))
    const types = new Set(res.json.data.map((p: { hosting_type: string }) => p.hosting_type))
    expect(types).toEqual(new Set(['shared', 'vps', 'dedicated']))
    for (const p of res.json.data) {
      expect(p.price.currency).toBe('CAD')
      expect(p.price.annual).toBeCloseTo(p.price.monthly * 10)
      expect(p.features.snapshots).toBe(p.hosting_type !== 'shared')
      expect(p.features.ssh).toBe(p.hosting_type !== 'shared')
      expect(p.skus.monthly).toBe(`svc_${p.slug}_monthly`)
    }
  })

  it("shows each plan's monthly AI tokens per site: 0 where no module calls the model, more as the price grows", async () => {
    const all = (await h.call('GET', '/api/v1/plans/?include_deprecated=true')).json.data as { slug: string; price: { monthly: number }; features: { ai_modules: string[]; ai_tokens_monthly: number } }[]
    expect(Object.fromEntries(all.map((p) => [p.slug, p.features.ai_tokens_monthly]))).toEqual({
      starter: 0, business: 100_000, performance: 500_000, agency: 200_000, 'agency-vps': 500_000, 'legacy-basic': 0,
    })
    const withModel = all.filter((p) => p.features.ai_modules.some((m) => m !== 'seo')).sort((a, b) => a.price.monthly - b.price.monthly)
    for (const [cheaper, dearer] of withModel.slice(1).map((p, i) => [withModel[i]!, p])) {
      expect(dearer!.features.ai_tokens_monthly).toBeGreaterThanOrEqual(cheaper!.features.ai_tokens_monthly)
    }
    expect((await h.call('GET', '/api/v1/plans/business/')).json.data.features).toMatchObject({ ai_modules: ['chatbot', 'seo'], ai_tokens_monthly: 100_000 })
  })

  it('filters by track and shows deprecated plans on request', async () => {
    const agency = (await h.call('GET', '/api/v1/plans/?track=agency')).json.data
    expect(agency.length).toBeGreaterThan(0)
    expect(agency.every((p: { track: string }) => p.track === 'agency')).toBe(true)
    const all = (await h.call('GET', '/api/v1/plans/?include_deprecated=true')).json.data
    expect(all.find((p: { slug: string }) => p.slug === 'legacy-basic')).toMatchObject({ deprecated: true })
  })

  it('gets one plan, deprecated included, and 404s an unknown one', async () => {
    expect((await h.call('GET', '/api/v1/plans/legacy-basic/')).json.data.deprecated).toBe(true)
    const res = await h.call('GET', '/api/v1/plans/platinum/')
    expect(res.status).toBe(404)
    expect(res.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'plan_slug' })
  })

  it('reflects a catalog change made by the admin CLI at once', async () => {
    h.services.plans.setDeprecated('starter', true)
    expect((await h.call('GET', '/api/v1/plans/')).json.data.map((p: { slug: string }) => p.slug)).not.toContain('starter')
    h.services.plans.setDeprecated('starter', false)
    expect((await h.call('GET', '/api/v1/plans/')).json.data.map((p: { slug: string }) => p.slug)).toContain('starter')
  })
})
