import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess, HomeRuntime } from '../../test/helpers/home-runtime'
import { inProcess } from '../../test/helpers/in-process'
import { OpenApiDoc, samples } from '../../test/helpers/openapi-doc'
import { toolsFromOpenApi } from './mcp/tools'

/**
 * The document's operations say what the server does (issue 36, item 9): what their bodies,
 * parameters and headers need, what their examples do when sent, and which methods each path
 * allows. The examples are sent to the server in-process, on a site with a real home folder.
 */
const runtime = new HomeRuntime()
// The webhook examples' host (agent.example.com) resolves to a public address without the network.
const h = inProcess({
  runtime,
  resolver: async (host) => {
    if (host === 'agent.example.com') return ['93.184.215.14']
    throw new Error('ENOTFOUND')
  },
})
afterAll(async () => {
  await h.close()
  runtime.close()
})

type Schema = Record<string, any>
const V1 = '/api/v1'
let api: OpenApiDoc
let site: { slug: string; key: string }

beforeAll(async () => {
  api = new OpenApiDoc((await h.call('GET', `${V1}/openapi.json`)).json)
  site = await buyInProcess(h, 'svc_business_monthly', 'ops')
}, 60_000)

/** A concrete path of a documented one: each path parameter its example, the site's slug for tenant_slug. */
function concrete(path: string, op: Schema, values: Record<string, string> = {}): string {
  const params = new Map(((op.parameters ?? []) as Schema[]).filter((p) => p.in === 'path').map((p) => [p.name, String(p.example)]))
  return path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? (name === 'tenant_slug' ? site.slug : params.get(name)!)))
}

describe('bodies', () => {
  it('keys/create: scopes, when sent, holds at least one', async () => {
    expect(api.bodyField('createKey', 'scopes').minItems).toBe(1)
    expect(api.acceptsBody('createKey', { scopes: [] })).toBe(false)
    expect(api.acceptsBody('createKey', { scopes: ['read'] })).toBe(true)
    const res = await h.call('POST', `${V1}/keys/create/`, { key: site.key, body: { scopes: [] } })
    expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }).toEqual({ status: 422, code: 'VALIDATION_ERROR', param: 'scopes' })
    expect(res.json.error.message).toMatch(/at least one scope \(read, write, admin\)/)
  })

  it('account/delete: confirm is exactly "DELETE"', async () => {
    expect(api.bodyField('deleteAccount', 'confirm').const).toBe('DELETE')
    const other = await h.register()
    for (const word of ['delete', 'DELETE ', 'yes']) {
      expect(api.acceptsBody('deleteAccount', { confirm: word }), word).toBe(false)
      const res = await h.call('DELETE', `${V1}/account/delete/`, { key: other.key, body: { confirm: word } })
      expect({ status: res.status, param: res.json.error?.param }, word).toEqual({ status: 422, param: 'confirm' })
    }
    expect(api.acceptsBody('deleteAccount', { confirm: 'DELETE' })).toBe(true)
    const done = await h.call('DELETE', `${V1}/account/delete/`, { key: other.key, body: { confirm: 'DELETE' } })
    expect(done.status, done.text).toBe(200)
  })
})

describe('the checkout secret', () => {
  it('is a required query parameter, or the X-Checkout-Secret header the document declares; without either the session is 404', async () => {
    for (const id of ['getCheckout', 'updateCheckout', 'completeCheckout', 'cancelCheckout']) {
      const params = api.operation(id)[2].parameters as Schema[]
      expect(params.find((p) => p.name === 'checkout_secret'), id).toMatchObject({ in: 'query', required: true })
      expect(params.find((p) => p.name === 'X-Checkout-Secret'), id).toMatchObject({ in: 'header', schema: { type: 'string' } })
      // The MCP tool takes the secret as an argument, and no header.
      const tool = toolsFromOpenApi(api.doc).find((t) => t.path === api.operation(id)[1])!
      expect(tool.inputSchema.required, id).toContain('checkout_secret')
      expect(Object.keys(tool.inputSchema.properties), id).not.toContain('X-Checkout-Secret')
    }
    const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.51.100.60' } })
    const { id, checkout_secret: secret } = created.json.data
    const none = await h.call('GET', `${V1}/acp/checkouts/${id}/`)
    expect({ status: none.status, param: none.json.error?.param }).toEqual({ status: 404, param: 'checkout_id' })
    expect(none.json.error.message).toMatch(/checkout_secret/)
    expect((await h.call('GET', `${V1}/acp/checkouts/${id}/`, { headers: { 'x-checkout-secret': secret } })).status).toBe(200)
    expect((await h.call('GET', `${V1}/acp/checkouts/${id}/?checkout_secret=${secret}`)).status).toBe(200)
  })
})

describe('the examples', () => {
  it("of the files operations work one after another: mkdir's folder is not the page the others name", async () => {
    const ids = ['listFiles', 'readFile', 'writeFile', 'uploadFile', 'makeDirectory', 'deleteFile']
    const run: string[] = []
    for (const pass of [1, 2]) {
      for (const id of [...ids, 'readFile']) {
        const [method, path, op] = api.operation(id)
        const query = ((op.parameters ?? []) as Schema[]).filter((p) => p.in === 'query').map((p) => `${p.name}=${encodeURIComponent(p.example)}`).join('&')
        const res = await h.call(method.toUpperCase(), `${V1}${concrete(path, op)}${query ? `?${query}` : ''}`, { key: site.key, body: op.requestBody?.content['application/json'].example })
        run.push(`${pass} ${id} ${res.status}${res.status >= 300 ? ` ${res.json?.error?.message}` : ''}`)
      }
    }
    expect(run.filter((r) => !/ 2\d\d$/.test(r))).toEqual([])
    expect(api.operation('makeDirectory')[2].requestBody.content['application/json'].example.path).not.toBe(api.operation('writeFile')[2].requestBody.content['application/json'].example.path)
  })

  it('of every operation are bodies and parameters the server takes: never a 422', async () => {
    const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.51.100.61' } })
    const checkout = { checkout_id: created.json.data.id as string, checkout_secret: created.json.data.checkout_secret as string }
    // What would take the fixtures away from the operations after them goes last.
    const last = ['deleteSite', 'deleteAccount']
    const operations = api.operations().sort(([, , a], [, , b]) => Number(last.includes(a.operationId)) - Number(last.includes(b.operationId)))
    const refused: string[] = []
    let sent = 0
    for (const [method, path, op] of operations) {
      const params = (op.parameters ?? []) as Schema[]
      const value = (p: Schema) => String(p.name === 'checkout_secret' || p.name === 'X-Checkout-Secret' ? checkout.checkout_secret : p.example)
      const query = params.filter((p) => p.in === 'query').map((p) => `${p.name}=${encodeURIComponent(value(p))}`).join('&')
      const headers = Object.fromEntries(params.filter((p) => p.in === 'header').map((p) => [p.name, value(p)]))
      const example = op.requestBody?.content['application/json'].example
      // A site the example names (acme-shop) is here the test's site; a new name stays new.
      const body = example === undefined ? undefined : Object.fromEntries(Object.entries(example).map(([k, v]) => [k, SITE_FIELDS.includes(k) ? site.slug : v]))
      const res = await h.call(method.toUpperCase(), `${V1}${concrete(path, op, checkout)}${query ? `?${query}` : ''}`, { key: site.key, body, headers: { ...headers, 'x-forwarded-for': `198.51.100.${70 + (sent++ % 100)}` } })
      if (res.status === 422 && !NAMES_AN_ID[op.operationId]?.includes(res.json.error.param)) refused.push(`${op.operationId}: ${res.json.error.param} ${res.json.error.message}`)
    }
    expect(sent).toBeGreaterThan(60)
    expect(refused).toEqual([])
  })
})

describe('values drawn from the patterns', () => {
  it('are taken by the server: never a 422 on the field they fill', async () => {
    const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.51.100.62' } })
    const checkout = { checkout_id: created.json.data.id as string, checkout_secret: created.json.data.checkout_secret as string }
    const patterned = (s: Schema | undefined) => s?.type === 'string' && s.const === undefined && s.enum === undefined && (s.pattern !== undefined || (s.allOf ?? []).some((a: Schema) => a.pattern !== undefined))
    // Each field with a pattern, in a request that is the operation's example but for it.
    const targets: { id: string; field: string; schema: Schema; send: (value: string) => Promise<{ status: number; json: any }>; documented?: (value: string) => boolean }[] = []
    for (const [method, path, op] of api.operations()) {
      if (DRAWN_ELSEWHERE[op.operationId] === '*') continue
      const params = (op.parameters ?? []) as Schema[]
      const example = op.requestBody?.content['application/json'].example as Record<string, unknown> | undefined
      const request = (field: string, value: string) => {
        const query = params.filter((p) => p.in === 'query').map((p) => `${p.name}=${encodeURIComponent(p.name === field ? value : p.name === 'checkout_secret' ? checkout.checkout_secret : String(p.example))}`).join('&')
        const body = example && Object.fromEntries(Object.entries(example).map(([k, v]) => [k, k === field ? value : SITE_FIELDS.includes(k) ? site.slug : v]))
        const url = `${V1}${concrete(path, op, { ...checkout, ...(params.some((p) => p.in === 'path' && p.name === field) ? { [field]: value } : {}) })}${query ? `?${query}` : ''}`
        return h.call(method.toUpperCase(), url, { key: site.key, body, headers: { 'x-forwarded-for': `198.51.100.${100 + (targets.length % 100)}` } })
      }
      for (const p of params) if (patterned(p.schema) && p.name !== 'tenant_slug') targets.push({ id: op.operationId, field: p.name, schema: p.schema, send: (v) => request(p.name, v) })
      const properties = (op.requestBody?.content['application/json'].schema.properties ?? {}) as Record<string, Schema>
      for (const [field, schema] of Object.entries(properties)) {
        if (!patterned(schema) || DRAWN_ELSEWHERE[op.operationId] === field) continue
        // The whole body as the document reads it: a field's value may depend on another (a DNS record's type).
        targets.push({ id: op.operationId, field, schema, send: (v) => request(field, v), documented: (v) => api.acceptsBody(op.operationId, { ...example, [field]: v }) })
      }
    }
    expect(targets.map((t) => `${t.id} ${t.field}`)).toEqual(expect.arrayContaining(['createKey name', 'updateAccount email', 'searchDomains domain', 'writeFile path', 'execCommand cwd', 'createCheckout sku', 'changeSiteDns subdomain']))
    const drawn = samples(targets.map((t) => t.schema), 5)
    const refused: string[] = []
    let sent = 0
    for (const [i, target] of targets.entries()) {
      expect(drawn[i]!.length, `${target.id} ${target.field}: no value drawn`).toBeGreaterThan(0)
      for (const value of drawn[i]!) {
        if (target.documented && !target.documented(value)) continue
        const res = await target.send(value)
        sent++
        if (res.status === 422 && res.json.error.param === target.field && !NAMES_AN_ID[target.id]?.includes(target.field)) refused.push(`${target.id} ${target.field} ${JSON.stringify(value)}: ${res.json.error.message}`)
      }
    }
    expect(sent).toBeGreaterThan(80)
    expect(refused).toEqual([])
  })
})

/**
 * Operations (or one field of one) whose drawn values this test does not send: those that would
 * take the fixtures away ('*'), and a key, which must also be a real key (the pattern states its
 * form; openapi-patterns.test.ts sends real and broken keys).
 */
const DRAWN_ELSEWHERE: Record<string, string> = { deleteSite: '*', deleteAccount: '*', addSshKey: 'public_key' }

/**
 * Body fields that name something that must exist in the caller's account: an unknown one is
 * 422 on its field (docs/api.md, "Ids named in a body"), which no schema can know beforehand.
 */
const NAMES_AN_ID: Record<string, string[]> = {
  createSite: ['subscription_id'],
  // A token that POST /keys/claim/request/ wrote into the site's home.
  claimKey: ['claim_token'],
  // A plan of the catalog, a site that exists, a folder that exists.
  createCheckout: ['sku'],
  requestClaim: ['site_slug'],
  scaleSite: ['new_plan'],
  execCommand: ['cwd'],
}

/** Body fields that name one of the caller's sites. */
const SITE_FIELDS = ['site_slug', 'tenant_slug']

describe('OPTIONS and a wrong method', () => {
  it('answer Allow with the methods the document lists for the path, and no route of another path', async () => {
    const wrong: string[] = []
    for (const [path, ops] of Object.entries(api.doc.paths as Record<string, Record<string, Schema>>)) {
      const documented = Object.keys(ops).map((m) => m.toUpperCase()).sort().join(', ')
      const url = `${V1}${concrete(path, Object.values(ops)[0]!)}`
      const res = await h.call('OPTIONS', url)
      const allow = (res.headers.get('allow') ?? '').split(', ').sort().join(', ')
      if (res.status !== 405 || allow !== documented) wrong.push(`${path}: ${res.status} Allow ${allow}, documented ${documented}`)
    }
    expect(wrong).toEqual([])
    for (const path of ['/sites/create/', '/domains/register/']) {
      const res = await h.call('PUT', `${V1}${path}`)
      expect({ status: res.status, allow: res.headers.get('allow') }, path).toEqual({ status: 405, allow: 'POST' })
      expect(res.json.error.message, path).toMatch(/use POST\.$/)
    }
  })
})
