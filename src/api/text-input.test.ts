import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess, HomeRuntime } from '../../test/helpers/home-runtime'
import { inProcess } from '../../test/helpers/in-process'

/**
 * Text is text: a body that is not UTF-8 is refused (never decoded with U+FFFD and acted on),
 * and names and other free-text fields refuse control characters and unpaired surrogates, each
 * with 422 naming the field and nothing changed.
 */
const runtime = new HomeRuntime()
const h = inProcess({ runtime })
afterAll(async () => {
  await h.close()
  runtime.close()
})

const V1 = '/api/v1'
const ED25519_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl'
/** `{"path":"public/bad\xff\xfe"}`: JSON whose string holds bytes UTF-8 does not allow. */
const NOT_UTF8 = new Uint8Array([...Buffer.from('{"path":"public/bad'), 0xff, 0xfe, ...Buffer.from('"}')])

let site: { slug: string; key: string }
beforeAll(async () => {
  site = await buyInProcess(h, 'svc_business_monthly', 'txt')
})

describe('bodies that are not UTF-8', () => {
  it('answer 400 on every route that takes a body, before anything else', async () => {
    const routes = (h.app.routes as { method: string; path: string }[]).filter((r) => r.path.startsWith(`${V1}/`) && r.path.endsWith('/') && ['POST', 'DELETE', 'PUT', 'PATCH'].includes(r.method))
    expect(routes.length).toBeGreaterThan(25)
    const wrong: string[] = []
    for (const r of routes) {
      const path = r.path.replace(':tenant_slug', site.slug).replace(/:(\w+)/g, () => crypto.randomUUID())
      const res = await h.call(r.method, path, { key: site.key, rawBytes: NOT_UTF8, headers: { 'content-type': 'application/json' } })
      if (res.status !== 400 || !/not valid UTF-8/.test(res.json?.error?.message)) wrong.push(`${r.method} ${r.path}: ${res.status} ${res.json?.error?.message}`)
    }
    expect(wrong).toEqual([])
  })

  it('creates nothing: the folder with replacement characters in its name is never made', async () => {
    const res = await h.call('POST', `${V1}/sites/${site.slug}/files/mkdir/`, { key: site.key, rawBytes: NOT_UTF8 })
    expect(res.status).toBe(400)
    const listing = await h.call('GET', `${V1}/sites/${site.slug}/files/?path=public`, { key: site.key })
    expect(listing.json.data.entries.map((e: { name: string }) => e.name).join('|')).not.toContain('bad')
  })

  it('answers 400 for a chunked body (no Content-Length) too, and accepts a UTF-8 byte order mark', async () => {
    const chunked = (bytes: Uint8Array) => new ReadableStream({ start(c) { c.enqueue(bytes.slice(0, 5)); c.enqueue(bytes.slice(5)); c.close() } })
    const res = await h.app.handle(new Request(`http://localhost${V1}/sites/${site.slug}/files/mkdir/`, { method: 'POST', headers: { authorization: `Bearer ${site.key}` }, body: chunked(NOT_UTF8), duplex: 'half' } as RequestInit))
    expect(res.status).toBe(400)
    expect((await res.json()).error.message).toMatch(/not valid UTF-8/)
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...Buffer.from('{"path":"public/with-bom"}')])
    const ok = await h.call('POST', `${V1}/sites/${site.slug}/files/mkdir/`, { key: site.key, rawBytes: bom })
    expect(ok.status, ok.text).toBe(200)
    expect(ok.json.data.path).toBe('public/with-bom')
  })
})

describe('names and other free-text fields', () => {
  const BAD = [['NUL', 'a\u0000b'], ['tab', 'a\tb'], ['newline', 'a\nb'], ['BEL', 'a\u0007b'], ['an ANSI escape', 'a\u001b[31mred'], ['C1 NEL', 'a\u0085b'], ['a lone surrogate', 'a\ud800b']] as const

  /** Each free-text field, with a request that is valid but for it. */
  const fields: { name: string; param: string; send: (v: string) => Promise<{ status: number; json: any }>; says?: RegExp; allows?: string[] }[] = [
    { name: 'register name', param: 'name', send: (v) => h.call('POST', `${V1}/auth/register/`, { body: { name: v }, headers: { 'x-forwarded-for': '203.0.113.9' } }) },
    { name: 'register email', param: 'email', send: (v) => h.call('POST', `${V1}/auth/register/`, { body: { email: `a${v}@example.com` }, headers: { 'x-forwarded-for': '203.0.113.9' } }) },
    { name: 'key name', param: 'name', send: (v) => h.call('POST', `${V1}/keys/create/`, { key: site.key, body: { name: v, scopes: ['read'] } }) },
    // A SKU has a form (the schema's pattern): the message says it.
    { name: 'checkout sku', param: 'sku', says: /must be svc_\{plan_slug\}_\{monthly\|annual\}/, send: (v) => h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: v }, headers: { 'x-forwarded-for': '203.0.113.10' } }) },
    { name: 'claim site_slug', param: 'site_slug', send: (v) => h.call('POST', `${V1}/keys/claim/request/`, { body: { site_slug: v }, headers: { 'x-forwarded-for': '203.0.113.11' } }) },
    { name: 'claim token', param: 'claim_token', send: (v) => h.call('POST', `${V1}/keys/claim/`, { body: { claim_token: v }, headers: { 'x-forwarded-for': '203.0.113.12' } }) },
    { name: 'scale new_plan', param: 'new_plan', send: (v) => h.call('POST', `${V1}/sites/${site.slug}/scale/`, { key: site.key, body: { new_plan: v } }) },
    // A real key with the bad text in its comment; the key parser names the problem itself, and a
    // tab is a field separator of the authorized_keys format.
    { name: 'SSH public_key', param: 'public_key', says: /control characters|several lines/, allows: ['tab'], send: (v) => h.call('POST', `${V1}/sites/${site.slug}/ssh/keys/`, { key: site.key, body: { public_key: `${ED25519_KEY} ${v}` } }) },
    { name: 'logs search', param: 'search', send: (v) => h.call('GET', `${V1}/sites/${site.slug}/logs/?search=${encodeURIComponent(v)}`, { key: site.key }) },
  ]

  it.each(fields.map((f) => [f.name, f] as const))('%s refuses control characters and unpaired surrogates with 422 naming it', async (_name, field) => {
    const keysBefore = (await h.call('GET', `${V1}/keys/`, { key: site.key })).json.data.length
    for (const [what, value] of BAD) {
      if (field.allows?.includes(what)) continue
      // A lone surrogate cannot travel in a URL (encodeURIComponent throws): body fields only.
      if (what === 'a lone surrogate' && field.param === 'search') continue
      const res = await field.send(value)
      expect(res.status, `${what}`).toBe(422)
      expect(res.json.error, what).toMatchObject({ code: 'VALIDATION_ERROR', param: field.param })
      expect(res.json.error.message, what).toMatch(field.says ?? /plain text/)
    }
    expect((await h.call('GET', `${V1}/keys/`, { key: site.key })).json.data.length).toBe(keysBefore)
  })

  it('still takes any printable text, accents and emoji included', async () => {
    const res = await h.call('POST', `${V1}/keys/create/`, { key: site.key, body: { name: 'déploiement 🚀 #2', scopes: ['read'] } })
    expect(res.status).toBe(201)
    expect(res.json.data.name).toBe('déploiement 🚀 #2')
  })

  it('refuses file content or a path with an unpaired surrogate (UTF-8 cannot store it) and writes nothing', async () => {
    const content = await h.call('POST', `${V1}/sites/${site.slug}/files/write/`, { key: site.key, rawBody: '{"path":"public/s.txt","content":"a\\ud800b"}' })
    expect(content.status).toBe(422)
    expect(content.json.error.param).toBe('content')
    const path = await h.call('POST', `${V1}/sites/${site.slug}/files/mkdir/`, { key: site.key, rawBody: '{"path":"public/x\\udc00"}' })
    expect(path.status).toBe(422)
    expect(path.json.error.param).toBe('path')
    const read = await h.call('GET', `${V1}/sites/${site.slug}/files/read/?path=public/s.txt`, { key: site.key })
    expect(read.status).toBe(404)
  })
})
