import SwaggerParser from '@apidevtools/swagger-parser'
import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../test/helpers/in-process'
import { ACCESS_EXTENSION } from './http/access'
import { routeGroups } from './app'
import { apiPlugins } from './plugins'

type Route = { method: string; path: string; hooks: unknown }

const h = inProcess()
afterAll(() => h.close())

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

describe('route table', () => {
  it('every route declares its access: public or a scope', () => {
    const undeclared = h.app.routes
      .filter((r: Route) => {
        const level = (r.hooks as { detail?: Record<string, unknown> }).detail?.[ACCESS_EXTENSION]
        return !['public', 'read', 'write', 'admin'].includes(level as string)
      })
      .map((r: Route) => `${r.method} ${r.path}`)
    expect(undeclared).toEqual([])
    expect(h.app.routes.length).toBeGreaterThan(8)
  })

  it('GET routes need no more than read, and routes that change things need more', () => {
    // The billing portal's link is a GET that opens money matters: admin (design.md, scopes).
    // The webhook endpoints (issue 41): their URLs may carry the receiver's own tokens, and their deliveries the account's events: admin, as their changes.
    const adminReads = new Set(['/api/v1/account/billing-portal/', '/api/v1/webhooks/', '/api/v1/webhooks/:webhook_id/', '/api/v1/webhooks/:webhook_id/deliveries/'])
    for (const r of h.app.routes as Route[]) {
      const level = (r.hooks as { detail?: Record<string, unknown> }).detail?.[ACCESS_EXTENSION]
      if (level === 'public') continue
      if (r.method === 'GET') expect(level, `${r.method} ${r.path}`).toBe(adminReads.has(r.path) ? 'admin' : 'read')
      else expect(['write', 'admin'], `${r.method} ${r.path}`).toContain(level)
    }
  })
})

describe('route groups', () => {
  const groups = () => {
    const s = h.services
    const plugins = apiPlugins({ keys: s.keys, guard: s.guard, checkouts: s.checkout, limiter: s.limiter, clients: s.clients })
    return routeGroups(s, plugins, () => {
      throw new Error('the listing builds no document')
    })
  }

  it('list every route the app serves, in the order it mounts them', () => {
    const listed = groups().flatMap((g) => (g.routes.routes as Route[]).map((r) => `${r.method} ${g.at}${r.path}`))
    expect(listed).toEqual((h.app.routes as Route[]).map((r) => `${r.method} ${r.path}`))
  })

  it('hold each route under a path its group says it owns', () => {
    const strays = groups().flatMap((g) => (g.routes.routes as Route[]).filter((r) => !g.owns.some((p) => r.path.startsWith(p))).map((r) => `${r.method} ${g.at}${r.path} (owns ${g.owns.join(', ')})`))
    expect(strays).toEqual([])
  })

  it("include the processor's pages because the built-in processor has them", () => {
    expect(h.services.processor.pages).toBeDefined()
    expect(groups().some((g) => g.owns.includes('/pay/'))).toBe(true)
    expect(groups().some((g) => g.owns.includes('/billing/portal/'))).toBe(true)
  })
})

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3 document, version 1.0, covering every API route with schemas', async () => {
    const res = await h.call('GET', '/api/v1/openapi.json')
    expect(res.status).toBe(200)
    const doc = res.json
    expect(doc.openapi).toMatch(/^3\./)
    expect(doc.info.version).toBe('1.0')
    // An independent validator, which dereferences and checks against the OpenAPI 3 schema.
    await SwaggerParser.validate(structuredClone(doc))
    const documented = new Set(Object.entries(doc.paths as Record<string, object>).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)))
    const apiRoutes = (h.app.routes as Route[]).filter((r) => r.path.startsWith('/api/v1/') && !(r.hooks as any).detail?.hide)
    for (const r of apiRoutes) {
      const path = r.path.slice('/api/v1'.length).replace(/:(\w+)/g, '{$1}')
      expect(documented, `${r.method} ${path}`).toContain(`${r.method} ${path}`)
    }
    for (const ops of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const op of Object.values(ops)) {
        const success = Object.keys(op.responses).find((s) => s.startsWith('2'))
        expect(op.responses[success!].content['application/json'].schema.properties.ok).toBeDefined()
        // Error answers are listed status by status, each the shared envelope; none left to `default`.
        expect(op.responses.default).toBeUndefined()
        for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
          if (status.startsWith('2')) continue
          expect(response.$ref, status).toMatch(/^#\/components\/responses\//)
          expect(doc.components.responses[response.$ref.split('/').pop()].content['application/json'].schema.$ref).toBe('#/components/schemas/Error')
        }
        expect(Object.keys(op.responses)).toContain('500')
        expect(['public', 'read', 'write', 'admin']).toContain(op[ACCESS_EXTENSION])
        const optional = op['x-berth-optional-scope'] !== undefined
        expect(op.security).toEqual(op[ACCESS_EXTENSION] === 'public' ? (optional ? [{}, { bearer: [] }] : []) : [{ bearer: [] }])
      }
    }
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' })
    expect(doc.servers[0].url).toMatch(/\/api\/v1$/)
    expect(doc.paths['/keys/create/'].post.requestBody.content['application/json'].schema.properties.scopes).toBeDefined()
  })
})

describe('envelope', () => {
  it('wraps success with ok, data and meta, and echoes the request id header', async () => {
    const res = await h.call('GET', '/api/v1/status/')
    expect(res.status).toBe(200)
    expect(res.json.ok).toBe(true)
    expect(res.json.meta.request_id).toMatch(UUID)
    expect(res.headers.get('x-request-id')).toBe(res.json.meta.request_id)
    expect(new Date(res.json.meta.timestamp).toISOString()).toBe(res.json.meta.timestamp)
  })

  it('gives every request a fresh id', async () => {
    const ids = await Promise.all([1, 2, 3].map(async () => (await h.call('GET', '/api/v1/status/')).json.meta.request_id))
    expect(new Set(ids).size).toBe(3)
  })

  it('answers unknown routes with a 404 envelope, here and outside the API', async () => {
    for (const path of ['/api/v1/nope/', '/nothing-here', '/api/v2/status/']) {
      const res = await h.call('GET', path)
      expect(res.status).toBe(404)
      expect(res.json).toMatchObject({ ok: false, error: { code: 'NOT_FOUND', param: null } })
      expect(res.json.meta.request_id).toBe(res.headers.get('x-request-id'))
    }
  })

  it('answers a wrong method with 405 and Allow', async () => {
    const res = await h.call('DELETE', '/api/v1/plans/')
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('GET')
    expect(res.json.error.code).toBe('METHOD_NOT_ALLOWED')
    const post = await h.call('GET', '/api/v1/auth/register')
    expect(post.status).toBe(405)
    expect(post.headers.get('allow')).toBe('POST')
  })

  it('answers unparseable JSON with 400 and an oversized body with 413, both enveloped', async () => {
    const bad = await h.call('POST', '/api/v1/auth/register/', { rawBody: '{"name": ', headers: { 'content-type': 'application/json' } })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toMatchObject({ code: 'VALIDATION_ERROR', param: null })
    const big = await h.call('POST', '/api/v1/auth/register/', { rawBody: JSON.stringify({ name: 'x'.repeat(2_000_000) }), headers: { 'content-length': '2000012' } })
    expect(big.status).toBe(413)
    expect(big.json.error.code).toBe('PAYLOAD_TOO_LARGE')
  })

  it('serves every route with and without its trailing slash, without redirecting', async () => {
    for (const path of ['/api/v1/status', '/api/v1/status/', '/api/v1/plans', '/api/v1/plans/', '/api/v1/plans/starter', '/api/v1/plans/starter/']) {
      const res = await h.call('GET', path)
      expect(res.status, path).toBe(200)
    }
  })

  it('hides internals when something breaks: 500 without stack or path, logged with the request id', async () => {
    const original = h.services.plans.listJson
    h.services.plans.listJson = () => {
      throw new Error('boom at /work/main/src/secret.ts:1')
    }
    try {
      const res = await h.call('GET', '/api/v1/plans/')
      expect(res.status).toBe(500)
      expect(res.json.error.code).toBe('INTERNAL_ERROR')
      expect(res.text).not.toContain('boom')
      expect(res.text).not.toContain('/work/')
      expect(h.log.lines.some((l) => l.request_id === res.json.meta.request_id && l.level === 'error')).toBe(true)
    } finally {
      h.services.plans.listJson = original
    }
  })
})

describe('status', () => {
  it('reports platform status and test mode while the built-in processor is in use', async () => {
    const res = await h.call('GET', '/api/v1/status/')
    expect(res.json.data).toMatchObject({ status: 'ok', region: 'local', provider: 'berth', api_version: 'v1', test_mode: true, payment_processor: 'local' })
  })
})
