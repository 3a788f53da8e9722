import Ajv2020 from 'ajv/dist/2020'
import addFormats from 'ajv-formats'
import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../test/helpers/in-process'

const h = inProcess()
afterAll(() => h.close())

type Op = Record<string, any>

async function document(): Promise<{ doc: Record<string, any>; ops: [string, Op][] }> {
  const doc = (await h.call('GET', '/api/v1/openapi.json')).json
  const ops = Object.entries(doc.paths as Record<string, Record<string, Op>>).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, op]) => [`${method.toUpperCase()} ${path}`, op] as [string, Op]))
  return { doc, ops }
}

describe('the published OpenAPI document', () => {
  it('gives every operation an example request and answer, each valid against its own schema', async () => {
    const { doc, ops } = await document()
    const ajv = new Ajv2020({ strict: false })
    addFormats(ajv)
    ajv.addSchema({ ...doc, $id: 'openapi' })
    const invalid: string[] = []
    const check = (where: string, pointer: string, example: unknown) => {
      if (example === undefined) return invalid.push(`${where}: no example`)
      const validate = ajv.compile({ $ref: `openapi#${pointer}` })
      if (!validate(example)) invalid.push(`${where}: ${ajv.errorsText(validate.errors)}`)
    }
    const esc = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')
    for (const [name, op] of ops) {
      const [method, path] = name.split(' ') as [string, string]
      const base = `/paths/${esc(path)}/${method.toLowerCase()}`
      const body = op.requestBody?.content?.['application/json']
      if (body) check(`${name} request`, `${base}/requestBody/content/application~1json/schema`, body.example)
      for (const [i, param] of ((op.parameters ?? []) as Op[]).entries()) check(`${name} ${param.name}`, `${base}/parameters/${i}/schema`, param.example)
      for (const [status, response] of Object.entries(op.responses as Record<string, Op>)) {
        if (response.$ref) continue
        check(`${name} ${status}`, `${base}/responses/${status}/content/application~1json/schema`, response.content['application/json'].example)
      }
    }
    for (const [name, response] of Object.entries(doc.components.responses as Record<string, Op>)) {
      check(name, '/components/schemas/Error', response.content['application/json'].example)
    }
    expect(invalid).toEqual([])
  })

  it('lists the error answers of every operation from the shared components, with their codes', async () => {
    const { doc, ops } = await document()
    for (const [name, op] of ops) {
      const errors = Object.keys(op.responses).filter((s) => !s.startsWith('2'))
      // Every route refuses unknown query parameters, and every route can fail on our side.
      expect(errors, name).toEqual(expect.arrayContaining(['422', '500']))
      if (op['x-berth-access'] !== 'public') expect(errors, name).toEqual(expect.arrayContaining(['401', '403']))
      if (name.includes('{tenant_slug}')) expect(errors, name).toContain('404')
      for (const status of errors) expect(doc.components.responses[op.responses[status].$ref.split('/').pop()], `${name} ${status}`).toBeDefined()
    }
    expect(doc.components.responses.Conflict.description).toContain('CONFLICT')
    expect(doc.components.schemas.Error.properties.error.properties.code.enum).toEqual(expect.arrayContaining(['NOT_FOUND', 'RATE_LIMITED', 'PAYMENT_DECLINED']))
    expect(ops.find(([n]) => n === 'POST /acp/checkouts/{checkout_id}/complete/')![1].responses['402']).toBeDefined()
    expect(ops.find(([n]) => n === 'POST /auth/register/')![1].responses['429']).toBeDefined()
  })

  it('describes every tag it uses, carries a license, and has no keyword JSON Schema does not know', async () => {
    const { doc, ops } = await document()
    const declared = new Map((doc.tags as { name: string; description?: string }[]).map((t) => [t.name, t.description]))
    for (const [name, op] of ops) for (const tag of op.tags as string[]) expect(declared.get(tag), `${name} tag ${tag}`).toBeTruthy()
    expect(doc.info.license.name).toBeTruthy()
    // The validator's own messages (`error: '...'` in a TypeBox schema) stay in the server.
    const messages: string[] = []
    const walk = (node: unknown, at: string): void => {
      if (typeof node !== 'object' || node === null) return
      for (const [key, value] of Object.entries(node)) {
        if (key === 'example' || key === 'examples') continue
        if (key === 'error' && typeof value !== 'object') messages.push(at)
        walk(value, `${at}/${key}`)
      }
    }
    walk(doc, '#')
    expect(messages).toEqual([])
    // ...and still answer: the custom message of the slug pattern.
    const res = await h.call('POST', '/api/v1/sites/create/', { key: (await h.register()).key, body: { slug: 'Not A Slug' } })
    expect(res.status).toBe(422)
    expect(res.json.error).toMatchObject({ param: 'slug' })
    expect(res.json.error.message).toMatch(/lowercase/i)
  })
})
