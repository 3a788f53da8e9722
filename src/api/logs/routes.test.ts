import { afterAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'

/**
 * Query validation and access of the site operation routes (logs, deploy, deployments, metrics),
 * in-process: these answer before any container is involved. test/site-operations.e2e.test.ts
 * covers what they return for real sites.
 */
const h = inProcess()
afterAll(() => h.close())
/** A site of the caller's own: validation answers only to the owner (another's site is 404 first). */
const mine = buyInProcess(h, 'svc_starter_monthly', 'ops')

describe('site operation routes', () => {
  it.each([
    ['/logs/?lines=0', 'lines', /'lines' must be an integer from 1 to 500 \(got 0\)/],
    ['/logs/?lines=501', 'lines', /from 1 to 500/],
    ['/logs/?lines=2.5', 'lines', /integer/],
    ['/logs/?type=debug', 'type', /one of error, access, php, app, audit/],
    [`/logs/?search=${'a'.repeat(201)}`, 'search', /at most 200 characters/],
    ['/logs/?level=warn', 'level', /Unknown query parameter 'level'/],
    ['/metrics/?days=0', 'days', /'days' must be an integer from 1 to 90 \(got 0\)/],
    ['/metrics/?days=91', 'days', /from 1 to 90/],
    ['/metrics/?days=x', 'days', /integer/],
  ])('GET /sites/{slug}%s answers 422 naming the parameter to the owner, and 404 to anyone else', async (path, param, message) => {
    const { slug, key } = await mine
    const res = await h.call('GET', `/api/v1/sites/${slug}${path}`, { key })
    expect(res.status).toBe(422)
    expect(res.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param })
    expect(res.json.error.message).toMatch(message)
    // Another account's key learns nothing from the same bad query: the site is not found first.
    const stranger = await h.register()
    for (const target of [slug, 'no-such-site']) {
      const other = await h.call('GET', `/api/v1/sites/${target}${path}`, { key: stranger.key })
      expect(other.status, target).toBe(404)
      expect(other.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'tenant_slug' })
    }
  })

  it.each([
    ['GET', '/logs/'], ['GET', '/metrics/'], ['POST', '/deploy/'], ['GET', '/deployments/'], ['GET', `/deployments/${crypto.randomUUID()}/`],
  ])('%s /sites/{unknown}%s answers 404', async (method, path) => {
    const { key } = await h.register()
    const res = await h.call(method, `/api/v1/sites/no-such-site${path}`, { key })
    expect(res.status).toBe(404)
    expect(res.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'tenant_slug' })
  })

  it('needs a key, and a deployment id that is a UUID', async () => {
    expect((await h.call('GET', '/api/v1/sites/x/logs/')).status).toBe(401)
    const { slug, key } = await mine
    const res = await h.call('GET', `/api/v1/sites/${slug}/deployments/42/`, { key })
    expect(res.status).toBe(422)
    expect(res.json.error.param).toBe('deployment_id')
  })
})

describe('GET /sites/{slug}/logs/?type=audit', () => {
  it("answers the site's audit trail to its owner, oldest first, with lines and search applied, and 404 to another account", async () => {
    const { slug, key, siteId } = await mine
    const actor = { kind: 'key' as const, keyId: 'k1', keyPrefix: 'svc_0123abcd' }
    for (const n of [1, 2, 3]) {
      const record = h.services.audit.begin({ siteId, kind: 'exec', actor, command: `echo ${n}` })
      h.clock.advance(5)
      record.end({ exitCode: n })
    }
    const all = await h.call('GET', `/api/v1/sites/${slug}/logs/?type=audit`, { key })
    expect(all.status, all.text).toBe(200)
    expect(all.json.data).toMatchObject({ type: 'audit', file: null })
    expect(all.json.data.lines).toEqual([1, 2, 3].map((n) => expect.stringMatching(new RegExp(`^\\S+Z exec key=svc_0123abcd exit=${n} duration_ms=5 cmd: echo ${n}$`))))
    const newest = await h.call('GET', `/api/v1/sites/${slug}/logs/?type=audit&lines=2`, { key })
    expect(newest.json.data.lines.map((l: string) => l.slice(-6))).toEqual(['echo 2', 'echo 3'])
    const found = await h.call('GET', `/api/v1/sites/${slug}/logs/?type=audit&search=${encodeURIComponent('exit=2 ')}`, { key })
    expect(found.json.data.lines).toHaveLength(1)
    expect(found.json.data.lines[0]).toMatch(/cmd: echo 2$/)
    const stranger = await h.register()
    const other = await h.call('GET', `/api/v1/sites/${slug}/logs/?type=audit`, { key: stranger.key })
    expect(other.status).toBe(404)
    expect(other.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'tenant_slug' })
  })
})
