import SwaggerParser from '@apidevtools/swagger-parser'
import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../test/helpers/home-runtime'
import { inProcess } from '../../test/helpers/in-process'
import { ED25519 } from '../../test/helpers/site-fixture'
import { parsePublicKey } from '../domain/ssh/public-key'

/**
 * The API description says everything the server enforces (issue 22, part 4): the document is
 * built in-process and each rule is checked twice, in the document (with a JSON Schema 2020-12
 * validator, as generated clients and testers read it) and against the server, on the same
 * table of inputs: both must accept or both refuse. Every in-process answer is also checked
 * against its documented status and schema (test/helpers/answer-checker.ts).
 */
const h = inProcess()
afterAll(() => h.close())

type Schema = Record<string, any>
let doc: Schema
let ajv: Ajv2020
let site: { slug: string; key: string }
let admin: string

const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')
const bodyPointer = (path: string) => `openapi#/paths/${esc(path)}/post/requestBody/content/application~1json/schema`
const operation = (id: string): [string, string, Schema] => {
  for (const [path, ops] of Object.entries(doc.paths as Record<string, Record<string, Schema>>)) {
    for (const [method, op] of Object.entries(ops)) if (op.operationId === id) return [method, path, op]
  }
  throw new Error(`no operation ${id}`)
}
/** Whether the document accepts `body` for POST `path`. */
const documentAccepts = (path: string, body: unknown) => ajv.validate({ $ref: bodyPointer(path) }, body) as boolean

beforeAll(async () => {
  doc = (await h.call('GET', '/api/v1/openapi.json')).json
  ajv = new Ajv2020({ strict: false })
  addFormats(ajv)
  ajv.addSchema({ ...doc, $id: 'openapi' })
  site = await buyInProcess(h, 'svc_starter_monthly', 'rules')
  admin = (await h.register()).key
}, 60_000)

describe('the document', () => {
  it('is a valid OpenAPI document (swagger-parser)', async () => {
    await SwaggerParser.validate(structuredClone(doc) as never)
  })
})

describe('ids named in a body', () => {
  it('an unknown or foreign id in a body is 422 on its field, never 404; 404 is for the path', async () => {
    const foreignSub = (h.services.store.sqlite.query('SELECT subscription_id AS id FROM sites WHERE slug = ?').get(site.slug) as { id: string }).id
    const cases = [
      { path: '/sites/create/', key: admin, body: { slug: 'fresh-site', subscription_id: '123e4567-e89b-42d3-a456-426614174000' }, param: 'subscription_id' },
      // Another account's subscription looks exactly like one that does not exist.
      { path: '/sites/create/', key: admin, body: { slug: 'fresh-site', subscription_id: foreignSub }, param: 'subscription_id' },
      { path: `/sites/${site.slug}/scale/`, key: site.key, body: { new_plan: 'no-such-plan' }, param: 'new_plan' },
      { path: '/keys/claim/request/', key: undefined, body: { site_slug: 'no-such-site' }, param: 'site_slug' },
      { path: '/acp/checkouts/', key: undefined, body: { sku: 'svc_nosuchplan_monthly' }, param: 'sku' },
    ]
    const messages: string[] = []
    for (const c of cases) {
      const res = await h.call('POST', `/api/v1${c.path}`, { key: c.key, body: c.body, headers: { 'x-forwarded-for': '198.51.100.20' } })
      expect({ status: res.status, code: res.json.error?.code, param: res.json.error?.param }, `${c.path} ${res.text}`).toEqual({ status: 422, code: 'VALIDATION_ERROR', param: c.param })
      messages.push(res.json.error.message.replace(/[0-9a-f-]{36}/, '<id>'))
    }
    expect(messages[0]).toBe(messages[1])
    expect(operation('createSite')[2].responses['404']).toBeUndefined()
    expect(operation('createSite')[2].responses['422']).toBeDefined()
  })
})

describe('integer query parameters', () => {
  it('are plain bounded integers with a default in range, and an empty one is a 422 that says so', async () => {
    const integers: [string, Schema][] = []
    for (const ops of Object.values(doc.paths as Record<string, Record<string, Schema>>)) {
      for (const op of Object.values(ops)) for (const p of (op.parameters ?? []) as Schema[]) if (p.schema.type === 'integer' || p.schema.anyOf?.some((b: Schema) => b.type === 'integer' || b.format === 'integer')) integers.push([`${op.operationId} ${p.name}`, p.schema])
    }
    expect(integers.map(([n]) => n)).toEqual(expect.arrayContaining(['getSiteLogs lines', 'getSiteMetrics days']))
    for (const [name, schema] of integers) {
      expect(schema.anyOf, name).toBeUndefined()
      expect(schema.format, name).toBeUndefined()
      expect(schema.default, name).toBeGreaterThanOrEqual(schema.minimum)
      expect(schema.default, name).toBeLessThanOrEqual(schema.maximum)
    }
    expect(JSON.stringify(doc)).not.toContain('"format":"integer"')
    for (const [query, param, says] of [['lines=', 'lines', /from 1 to 500, or leave it out for the default 100/], ['days=', 'days', /from 1 to 90, or leave it out for the default 7/]] as const) {
      const route = param === 'lines' ? 'logs' : 'metrics'
      const res = await h.call('GET', `/api/v1/sites/${site.slug}/${route}/?${query}`, { key: site.key })
      expect({ status: res.status, param: res.json.error?.param }).toEqual({ status: 422, param })
      expect(res.json.error.message).toMatch(says)
    }
  })
})

/** Sends each body, and checks the document's schema and the server give the same verdict. */
async function expectAgreement(path: string, key: string, rows: [unknown, boolean][], param?: (body: any) => string, documented = path) {
  for (const [body, ok] of rows) {
    const res = await h.call('POST', `/api/v1${path}`, { key, body, headers: { 'x-forwarded-for': '198.51.100.21' } })
    const label = `${path} ${JSON.stringify(body).slice(0, 120)}`
    expect(res.status < 300, `${label}: server ${res.status} ${res.text.slice(0, 200)}`).toBe(ok)
    if (!ok) {
      expect(res.status, label).toBe(422)
      if (param) expect(res.json.error.param, label).toBe(param(body))
    }
    expect(documentAccepts(documented, body), `${label}: document`).toBe(ok)
  }
}

describe('rules the server enforces are in the document, and agree with it', () => {
  it('SKUs: {prefix}_{plan_slug}_{monthly|annual}', async () => {
    const rows: [unknown, boolean][] = [
      [{ sku: 'svc_starter_monthly' }, true], [{ sku: 'svc_business_annual' }, true],
      [{ sku: 'starter' }, false], [{ sku: 'svc_starter_weekly' }, false], [{ sku: 'svc_Starter_monthly' }, false],
      [{ sku: 'xyz_starter_monthly' }, false], [{ sku: 'svc__monthly' }, false], [{ sku: '' }, false],
    ]
    await expectAgreement('/acp/checkouts/', admin, rows, () => 'sku')
    const res = await h.call('POST', '/api/v1/acp/checkouts/', { key: admin, body: { sku: 'starter' }, headers: { 'x-forwarded-for': '198.51.100.22' } })
    expect(res.json.error.message).toMatch(/svc_\{plan_slug\}_\{monthly\|annual\}.*GET \/plans\//)
  })

  it('domain names to search: host names, labels of at most 63 characters', async () => {
    const [, , search] = operation('searchDomains')
    const schema = search.parameters.find((p: Schema) => p.name === 'domain').schema
    for (const [name, ok] of [
      ['example.com', true], ['Example.COM.', true], ['my-shop.ca', true], [`${'a'.repeat(63)}.com`, true],
      [`${'a'.repeat(64)}.com`, false], ['localhost', false], ['https://example.com/', false], ['exa mple.com', false],
      ['-bad.com', false], ['example.c0m', false], ['example.com:80', false], [`${'a.'.repeat(127)}com`, false],
    ] as const) {
      const res = await h.call('GET', `/api/v1/domains/search/?domain=${encodeURIComponent(name)}`, { key: admin })
      expect(res.status === 200, `${name}: server ${res.status} ${res.text.slice(0, 160)}`).toBe(ok)
      if (!ok) expect(res.json.error.param).toBe('domain')
      expect(ajv.validate(schema, name), `${name}: document`).toBe(ok)
    }
  })

  it('DNS records: labels of at most 63 characters, each type its value, SRV at _service._proto', async () => {
    let n = 0
    const rec = (type: string, value: string | undefined, subdomain?: string) => ({ action: 'create', type, ...(subdomain === undefined ? { subdomain: `r${++n}` } : { subdomain }), ...(value === undefined ? {} : { value }) })
    const rows: [unknown, boolean][] = [
      [rec('A', '192.0.2.1'), true], [rec('A', '999.1.1.1'), false], [rec('A', '010.1.1.1'), false], [rec('A', '2001:db8::1'), false], [rec('A', undefined), false],
      [rec('AAAA', '2001:db8::1'), true], [rec('AAAA', '192.0.2.1'), false], [rec('AAAA', 'fe80::1%eth0'), false],
      [rec('CNAME', 'shop.example.com'), true], [rec('CNAME', 'shop.example.com.'), true], [rec('CNAME', 'not a host'), false], [rec('CNAME', 'localhostonly'), false],
      [rec('MX', '10 mail.example.com'), true], [rec('MX', '65535 mail.example.com'), true], [rec('MX', '65536 mail.example.com'), false], [rec('MX', '10'), false], [rec('MX', 'ten mail.example.com'), false],
      [rec('SRV', '10 5 5060 sip.example.com', '_sip._tcp'), true], [rec('SRV', '0 0 0 .', '_imap._tcp'), true], [rec('SRV', '10 5 5060 sip.example.com', 'sip'), false], [rec('SRV', '1 1 sip.example.com', '_sip._udp'), false], [rec('SRV', '10 5 5060 sip.example.com'), false],
      [rec('TXT', 'v=spf1 -all'), true], [rec('TXT', '   '), false],
      [rec('A', '192.0.2.2', 'a'.repeat(63)), true], [rec('A', '192.0.2.2', 'a'.repeat(64)), false], [rec('A', '192.0.2.2', `x.${'b'.repeat(64)}`), false],
      [rec('A', '192.0.2.2', '*'), false], [rec('A', '192.0.2.2', 'a..b'), false], [rec('A', '192.0.2.2', '-a'), false], [rec('TXT', 'x', '_dmarc'), true], [rec('A', '192.0.2.3', '@'), true],
      // Deleting is by type and name; a value that matches nothing is 404, not a format error.
      [{ action: 'delete', type: 'A', subdomain: 'r1', value: '192.0.2.1' }, true],
    ]
    await expectAgreement(`/sites/${site.slug}/dns/`, site.key, rows, undefined, '/sites/{tenant_slug}/dns/')
  })

  it("SSH keys: one line of a supported type; the document takes every line the server's parser takes", () => {
    const [, path] = operation('addSshKey')
    const accepts = (line: string) => documentAccepts(path, { public_key: line })
    const rsa = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7 user@host'
    for (const line of [ED25519, `${ED25519}\n`, `from="10.0.0.1",no-pty ${ED25519}`, `  ${ED25519}`, ED25519.split(' ').slice(0, 2).join(' ')]) {
      expect(() => parsePublicKey(line), line).not.toThrow()
      expect(accepts(line), line).toBe(true)
    }
    for (const line of ['ssh-dss AAAAB3NzaC1kc3MAAACBAP test', `${ED25519}\n${ED25519}`, '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n', 'AAAAC3NzaC1lZDI1NTE5', 'ssh-ed25519', 'ssh-ed25519 not*base64', rsa.replace('ssh-rsa', 'ssh-rsa-cert')]) {
      expect(() => parsePublicKey(line), line).toThrow()
      expect(accepts(line), line).toBe(false)
    }
  })

  it('.ca names need ca_legal_type', async () => {
    const contact = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
    const [, path] = operation('registerDomain')
    expect(documentAccepts(path, { domain: 'fine-name.ca', period: 1, contact })).toBe(false)
    expect(documentAccepts(path, { domain: 'Fine-Name.CA.', period: 1, contact })).toBe(false)
    expect(documentAccepts(path, { domain: 'fine-name.ca', period: 1, contact, ca_legal_type: 'CCO' })).toBe(true)
    expect(documentAccepts(path, { domain: 'fine-name.com', period: 1, contact })).toBe(true)
    const res = await h.call('POST', '/api/v1/domains/register/', { key: admin, body: { domain: 'fine-name.ca', period: 1, contact } })
    expect({ status: res.status, param: res.json.error?.param }).toEqual({ status: 422, param: 'ca_legal_type' })
  })

  it('account/update and domain settings need at least one field', async () => {
    for (const id of ['updateAccount', 'updateDomainSettings']) {
      const [, path, op] = operation(id)
      expect(op.requestBody.required, id).toBe(true)
      expect(documentAccepts(path, {}), id).toBe(false)
      const field = id === 'updateAccount' ? { language: 'fr' } : { auto_renew: false }
      expect(documentAccepts(path, field), id).toBe(true)
    }
    const res = await h.call('POST', '/api/v1/account/update/', { key: admin, body: {} })
    expect({ status: res.status, param: res.json.error?.param }).toEqual({ status: 422, param: null })
    expect(res.json.error.message).toMatch(/at least one of/)
  })
})

describe('links', () => {
  it('lead through checkout, keys and domains to operations and parameters that exist', () => {
    const targets = new Map<string, Schema>()
    for (const ops of Object.values(doc.paths as Record<string, Record<string, Schema>>)) for (const op of Object.values(ops)) targets.set(op.operationId, op)
    const flows: string[] = []
    for (const [id, op] of targets) {
      for (const response of Object.values(op.responses as Record<string, Schema>)) {
        for (const link of Object.values((response.links ?? {}) as Record<string, Schema>)) {
          const target = targets.get(link.operationId)
          expect(target, `${id} → ${link.operationId}`).toBeDefined()
          const names = new Set(((target!.parameters ?? []) as Schema[]).map((p) => p.name))
          for (const name of Object.keys(link.parameters)) expect(names, `${id} → ${link.operationId} ${name}`).toContain(name)
          // Every path parameter of the target is given.
          for (const p of (target!.parameters ?? []) as Schema[]) if (p.in === 'path') expect(Object.keys(link.parameters), `${id} → ${link.operationId}`).toContain(p.name)
          flows.push(`${id} → ${link.operationId}`)
        }
      }
    }
    expect(flows).toEqual(expect.arrayContaining([
      'createCheckout → updateCheckout', 'updateCheckout → completeCheckout', 'completeCheckout → getSite',
      'createKey → revokeKey', 'createKey → rotateKey', 'registerDomain → getDomain',
    ]))
  })

  it('the checkout links carry values that work: create, update, complete and the site, by the link expressions', async () => {
    const follow = (expression: string, answer: Schema, requestQuery: URLSearchParams) => {
      if (expression.startsWith('$request.query.')) return requestQuery.get(expression.slice('$request.query.'.length))!
      return expression.replace('$response.body#', '').split('/').filter(Boolean).reduce((v: any, k) => v[k], answer)
    }
    const links = (id: string, status: string) => operation(id)[2].responses[status].links as Record<string, Schema>
    const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.51.100.23' } })
    const toUpdate = links('createCheckout', '201').UpdateCheckout.parameters
    const q1 = new URLSearchParams({ checkout_secret: follow(toUpdate.checkout_secret, created.json, new URLSearchParams()) })
    const updated = await h.call('POST', `/api/v1/acp/checkouts/${follow(toUpdate.checkout_id, created.json, q1)}/update/?${q1}`, { body: { requested_slug: `links-${Date.now().toString(36)}` } })
    expect(updated.status, updated.text).toBe(200)
    const toComplete = links('updateCheckout', '200').CompleteCheckout.parameters
    const q2 = new URLSearchParams({ checkout_secret: follow(toComplete.checkout_secret, updated.json, q1) })
    const done = await h.call('POST', `/api/v1/acp/checkouts/${follow(toComplete.checkout_id, updated.json, q1)}/complete/?${q2}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
    expect(done.status, done.text).toBe(201)
    const toSite = links('completeCheckout', '201').GetSite.parameters
    const got = await h.call('GET', `/api/v1/sites/${follow(toSite.tenant_slug, done.json, q2)}/`, { key: done.json.data.api_key })
    expect(got.status, got.text).toBe(200)
  })
})
