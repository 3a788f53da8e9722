import { readFileSync, existsSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'
import { makeSiteEnvRepository, SiteEnvService } from '../../domain/env'
import { SitesRepository } from '../../domain/sites/repository'
import { BoxKeyFile } from '../../drivers/secrets/box-key'

/**
 * GET, PATCH and PUT /sites/{tenant_slug}/env/ through the API in-process (real Requests through
 * the app, a real SQLite file, the real box key file): what an agent sees of its settings and
 * secrets, what it cannot do, and what the store file holds.
 */
const h = inProcess()
let site: { slug: string; key: string; siteId: string }
let path: string
const SECRET = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'
const changed: string[] = []
beforeAll(async () => {
  site = await buyInProcess(h, 'svc_starter_monthly', 'env')
  path = `/api/v1/sites/${site.slug}/env/`
  h.services.env.onChanged(async (s) => {
    changed.push(s.slug)
  })
})
afterAll(() => h.close())

const call = (method: string, body?: unknown, key = site.key) => h.call(method, path, { key, body })
const byName = (data: any) => Object.fromEntries(data.variables.map((v: any) => [v.name, v]))

describe('settings and secrets', () => {
  it('start empty, with the limits', async () => {
    const got = await call('GET')
    expect(got.status, got.text).toBe(200)
    expect(got.json.data).toEqual({ variables: [], count: 0, bytes: 0, limits: { variables: 200, bytes: 262144, value_bytes: 32768 }, warning: null })
  })

  it("PATCH sets variables; a secret's value is never shown again, only its length and last 4 characters", async () => {
    const before = changed.length
    const set = await call('PATCH', { variables: { API_URL: 'https://api.example.com', STRIPE_KEY: SECRET, PIN: '4821' }, secret: ['STRIPE_KEY', 'PIN'] })
    expect(set.status, set.text).toBe(200)
    expect(changed.length).toBe(before + 1)
    const got = await call('GET')
    for (const answer of [set, got]) {
      expect(answer.text).not.toContain(SECRET)
      expect(answer.text).not.toContain('4821')
      const vars = byName(answer.json.data)
      expect(vars.API_URL).toMatchObject({ value: 'https://api.example.com', secret: false, readable: true, length: 23, last4: null })
      expect(vars.STRIPE_KEY).toMatchObject({ value: null, secret: true, readable: true, length: 32, last4: 'p7dc' })
      expect(vars.PIN).toMatchObject({ value: null, secret: true, readable: true, length: 4, last4: null })
      expect(answer.json.data.count).toBe(3)
    }
    // What the app, its build and exec get; what the output and logs are masked of.
    expect(h.services.env.valuesOf(site.siteId)).toEqual({ API_URL: 'https://api.example.com', PIN: '4821', STRIPE_KEY: SECRET })
    expect(h.services.env.secretValuesOf(site.siteId).sort()).toEqual(['4821', SECRET])
    // The same again changes nothing: no restart.
    await call('PATCH', { variables: { API_URL: 'https://api.example.com', STRIPE_KEY: SECRET } })
    await call('PATCH', {})
    expect(changed.length).toBe(before + 1)
  })

  it('keeps no secret value in plain text in the store file; the box key is 0600 beside it', async () => {
    const files = ['berth.db', 'berth.db-wal'].map((f) => join(h.dir, f)).filter(existsSync)
    const bytes = Buffer.concat(files.map((f) => readFileSync(f)))
    expect(bytes.includes(Buffer.from('https://api.example.com'))).toBe(true)
    expect(bytes.includes(Buffer.from(SECRET))).toBe(false)
    expect(bytes.includes(Buffer.from('p7dc'))).toBe(false)
    expect(statSync(join(h.dir, 'secrets.key')).mode & 0o777).toBe(0o600)
  })

  it('read by a box without the key (a store restored without secrets.key): secrets unreadable, given to no app, plain ones as they were', async () => {
    const keyless = new SiteEnvService({ store: h.services.store, repo: makeSiteEnvRepository(h.services.store), box: new BoxKeyFile(join(h.dir, 'no-such.key')), clock: h.clock, log: h.log })
    const row = (await h.call('GET', `/api/v1/sites/${site.slug}/`, { key: site.key })).json.data
    const view = keyless.view({ ...row, id: site.siteId, slug: site.slug })
    expect(byName(view).STRIPE_KEY).toMatchObject({ secret: true, readable: false, value: null, length: null, last4: null })
    expect(byName(view).API_URL).toMatchObject({ readable: true, value: 'https://api.example.com' })
    expect(view.warning).toMatch(/cannot open the secrets PIN, STRIPE_KEY/)
    expect(keyless.valuesOf(site.siteId)).toEqual({ API_URL: 'https://api.example.com' })
    expect(keyless.secretValuesOf(site.siteId)).toEqual([])
  })

  it('a secret replaced stays secret; secret alone marks an existing variable; null removes', async () => {
    await call('PATCH', { variables: { STRIPE_KEY: 'sk_live_rotated_value_0000000000' } })
    await call('PATCH', { variables: { DEBUG: 'false' } })
    const marked = await call('PATCH', { variables: { PIN: null }, secret: ['API_URL'] })
    expect(marked.status, marked.text).toBe(200)
    const vars = byName(marked.json.data)
    expect(vars.STRIPE_KEY).toMatchObject({ secret: true, value: null, last4: '0000' })
    expect(vars.API_URL).toMatchObject({ secret: true, value: null, length: 23 })
    expect(vars.DEBUG).toMatchObject({ secret: false, value: 'false' })
    expect(vars.PIN).toBeUndefined()
    expect(h.services.env.valuesOf(site.siteId)).toEqual({ API_URL: 'https://api.example.com', DEBUG: 'false', STRIPE_KEY: 'sk_live_rotated_value_0000000000' })
  })

  it('PUT replaces the whole set, keeping the secrets it names without their values; PUT {} clears it', async () => {
    const put = await call('PUT', { variables: { NODE_ENV: 'production' }, secret: ['STRIPE_KEY'] })
    expect(put.status, put.text).toBe(200)
    expect(put.json.data.variables.map((v: any) => [v.name, v.secret])).toEqual([['NODE_ENV', false], ['STRIPE_KEY', true]])
    expect(h.services.env.valuesOf(site.siteId)).toEqual({ NODE_ENV: 'production', STRIPE_KEY: 'sk_live_rotated_value_0000000000' })
    const cleared = await call('PUT', {})
    expect(cleared.status, cleared.text).toBe(200)
    expect(cleared.json.data).toMatchObject({ variables: [], count: 0, bytes: 0 })
    expect(h.services.env.valuesOf(site.siteId)).toEqual({})
  })

  it('names in its warning the variables PHP cannot be given, on a site that runs PHP only', async () => {
    const set = { variables: { PEM: '-----BEGIN KEY-----\nabc\n-----END KEY-----', HASH: '$2y$10$abc', URL: 'https://example.com' }, secret: ['PEM'] }
    const vps = await buyInProcess(h, 'svc_business_monthly', 'envphp')
    const onVps = await h.call('PATCH', `/api/v1/sites/${vps.slug}/env/`, { key: vps.key, body: set })
    expect(onVps.status, onVps.text).toBe(200)
    for (const answer of [onVps, await h.call('GET', `/api/v1/sites/${vps.slug}/env/`, { key: vps.key })]) {
      expect(answer.json.data.warning).toMatch(/^PHP does not get HASH \(a leading \$\), PEM \(a line break\): /)
      expect(answer.text).not.toContain('BEGIN KEY')
    }
    // An app whose live release is Node: its PHP serves nothing, so nothing to warn of; a PHP release: the warning again.
    const sites = new SitesRepository(h.services.store)
    const warningAs = async (runtime: 'node' | 'php') => {
      sites.setApp(vps.siteId, { runtime, live: null }, Date.now())
      return (await h.call('GET', `/api/v1/sites/${vps.slug}/env/`, { key: vps.key })).json.data.warning
    }
    expect(await warningAs('node')).toBeNull()
    expect(await warningAs('php')).toMatch(/^PHP does not get HASH/)
    // The shared plan's site has no PHP: nothing to warn of.
    const shared = await call('PATCH', set)
    expect(shared.json.data.warning).toBeNull()
    expect((await call('PUT', {})).status).toBe(200)
  })

  it('needs write for changes, and answers 404 for another account\'s site', async () => {
    const reader = (await h.call('POST', '/api/v1/keys/create/', { key: site.key, body: { name: 'ro', scopes: ['read'] } })).json.data.api_key
    expect((await call('GET', undefined, reader)).status).toBe(200)
    expect((await call('PATCH', { variables: { A: 'b' } }, reader)).status).toBe(403)
    const other = await h.register()
    for (const method of ['GET', 'PATCH', 'PUT']) {
      const answer = await call(method, method === 'GET' ? undefined : { variables: { A: 'b' } }, other.key)
      expect([answer.status, answer.json.error.code, answer.json.error.param]).toEqual([404, 'NOT_FOUND', 'tenant_slug'])
    }
    expect(h.services.env.valuesOf(site.siteId)).toEqual({})
  })
})

describe('bad inputs get 422 naming the field, and change nothing', () => {
  const many = Object.fromEntries(Array.from({ length: 201 }, (_, i) => [`V${i}`, 'x']))
  const big = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`BIG${i}`, 'x'.repeat(30 * 1024)]))
  const rows: [string, string, unknown, string, RegExp][] = [
    ['a name with a dash', 'PATCH', { variables: { 'MY-VAR': 'x' } }, 'variables.MY-VAR', /letters, digits and underscores/],
    ['a name starting with a digit', 'PUT', { variables: { '1ABC': 'x' } }, 'variables.1ABC', /not starting with a digit/],
    ['a name too long', 'PATCH', { variables: { ['A'.repeat(129)]: 'x' } }, `variables.${'A'.repeat(129)}`, /at most 128 characters/],
    ['a reserved name', 'PATCH', { variables: { PORT: '3000' } }, 'variables.PORT', /set by the platform/],
    ['a BERTH_ name', 'PATCH', { variables: { BERTH_RELEASE: 'x' } }, 'variables.BERTH_RELEASE', /every name starting BERTH_/],
    ['a loader name', 'PUT', { variables: { LD_PRELOAD: '/tmp/x.so' } }, 'variables.LD_PRELOAD', /starting LD_/],
    ['a value too long', 'PATCH', { variables: { BLOB: 'x'.repeat(32 * 1024 + 1) } }, 'variables.BLOB', /at most 32768/],
    ['a value with a NUL', 'PATCH', { variables: { A: 'a\u0000b' } }, 'variables.A', /NUL/],
    ['a number as a value', 'PATCH', { variables: { N: 3 } }, 'variables.N', /a string, or null to remove/],
    ['an object as a value', 'PUT', { variables: { N: { x: 1 } } }, 'variables.N', /a string, or null to remove/],
    ['too many variables', 'PUT', { variables: many }, 'variables', /at most 200/],
    ['too many bytes in all', 'PUT', { variables: big }, 'variables', /at most 262144/],
    ['secret naming no variable', 'PATCH', { secret: ['ABSENT'] }, 'secret', /no variable ABSENT to mark secret/],
    ['secret naming one removed in the same call', 'PATCH', { variables: { KEEP: null }, secret: ['KEEP'] }, 'secret', /removed \(null\) and marked secret/],
    ['secret naming a bad name', 'PATCH', { variables: { OK: 'x' }, secret: ['no way'] }, 'secret', /not a variable name/],
    ['an unknown field', 'PATCH', { vars: { A: 'b' } }, 'vars', /Unknown field/],
  ]
  beforeAll(async () => {
    await call('PUT', { variables: { KEEP: 'kept', TOKEN: 'a-secret-token' }, secret: ['TOKEN'] })
  })
  for (const [name, method, body, param, says] of rows) {
    it(name, async () => {
      const answer = await call(method, body)
      expect([answer.status, answer.json?.error?.code, answer.json?.error?.param], answer.text.slice(0, 500)).toEqual([422, 'VALIDATION_ERROR', param])
      expect(answer.json.error.message).toMatch(says)
      expect(h.services.env.valuesOf(site.siteId)).toEqual({ KEEP: 'kept', TOKEN: 'a-secret-token' })
    })
  }
})

describe("a reaped site's variables", () => {
  it('go with it after its grace period', async () => {
    const gone = await buyInProcess(h, 'svc_starter_monthly', 'envgone')
    const set = await h.call('PATCH', `/api/v1/sites/${gone.slug}/env/`, { key: gone.key, body: { variables: { A: 'a', TOKEN: 'a-secret-token' }, secret: ['TOKEN'] } })
    expect(set.status, set.text).toBe(200)
    expect((await h.call('DELETE', `/api/v1/sites/${gone.slug}/delete/`, { key: gone.key })).status).toBe(200)
    h.clock.advance(7 * 24 * 3600_000 + 1000)
    expect((await h.services.reaper.reap()).reaped).toContain(gone.slug)
    expect(h.services.store.sqlite.query('SELECT count(*) AS n FROM site_env WHERE site_id = ?').get(gone.siteId)).toEqual({ n: 0 })
    // The other site's are untouched.
    expect(h.services.env.valuesOf(site.siteId)).toEqual({ KEEP: 'kept', TOKEN: 'a-secret-token' })
  })
})
