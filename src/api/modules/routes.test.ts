import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'

/** Modules on a real purchased site (real SQLite, real Docker), through the in-process API. */
const h = inProcess()
afterAll(() => h.close())

let key = ''
let slug = ''
const modulesOf = async (k = key) => (await h.call('GET', `/api/v1/sites/${slug}/modules/`, { key: k })).json.data as { name: string; included: boolean; enabled: boolean }[]
const toggle = (name: string, body?: unknown, k = key) => h.call('POST', `/api/v1/sites/${slug}/modules/${name}/toggle/`, { key: k, body })

beforeAll(async () => {
  slug = `mods-${Math.random().toString(36).slice(2, 8)}`
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.19.0.1' } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug, buyer_email: 'mods@example.com' } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  key = done.json.data.api_key
  await h.services.jobs.drain()
}, 60_000)

describe('AI modules', () => {
  it("lists the four modules with what the plan includes, all off at first", async () => {
    expect(await modulesOf()).toEqual([
      expect.objectContaining({ name: 'chatbot', included: false, enabled: false }),
      expect.objectContaining({ name: 'seo', included: true, enabled: false }),
      expect.objectContaining({ name: 'translation', included: false, enabled: false }),
      expect.objectContaining({ name: 'content', included: false, enabled: false }),
    ])
  })

  it('flips an included module, and toggling twice restores the state', async () => {
    const on = await toggle('seo')
    expect(on.status).toBe(200)
    expect(on.json.data).toMatchObject({ name: 'seo', enabled: true })
    expect((await modulesOf()).find((m) => m.name === 'seo')?.enabled).toBe(true)
    expect((await toggle('seo')).json.data.enabled).toBe(false)
    expect((await modulesOf()).find((m) => m.name === 'seo')?.enabled).toBe(false)
    // The site view carries the same state.
    expect((await h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data.modules).toEqual({ seo: false })
  })

  it('sets an explicit state idempotently', async () => {
    expect((await toggle('seo', { enabled: true })).json.data.enabled).toBe(true)
    expect((await toggle('seo', { enabled: true })).json.data.enabled).toBe(true)
    expect((await toggle('seo', { enabled: false })).json.data.enabled).toBe(false)
  })

  it('refuses a module outside the plan with 403 and changes nothing', async () => {
    const res = await toggle('chatbot')
    expect(res.status).toBe(403)
    expect(res.json.error).toMatchObject({ code: 'FORBIDDEN', param: 'module_name' })
    expect(res.json.error.message).toContain('does not include the chatbot module')
    expect((await modulesOf()).find((m) => m.name === 'chatbot')?.enabled).toBe(false)
  })

  it('answers 404 for an unknown module, 422 for a bad body', async () => {
    const unknown = await toggle('crypto-miner')
    expect(unknown.status).toBe(404)
    expect(unknown.json.error.param).toBe('module_name')
    const bad = await toggle('seo', { enabled: 'yes' })
    expect(bad.status).toBe(422)
    expect(bad.json.error.param).toBe('enabled')
    expect((await modulesOf()).find((m) => m.name === 'seo')?.enabled).toBe(false)
  })

  it("hides the site from another account (404) and needs write to toggle (403)", async () => {
    const other = await h.register()
    expect((await h.call('GET', `/api/v1/sites/${slug}/modules/`, { key: other.key })).status).toBe(404)
    expect((await toggle('seo', undefined, other.key)).status).toBe(404)
    const reader = await h.call('POST', '/api/v1/keys/create/', { key, body: { name: 'reader', scopes: ['read'] } })
    expect((await modulesOf(reader.json.data.api_key)).length).toBe(4)
    expect((await toggle('seo', undefined, reader.json.data.api_key)).status).toBe(403)
  })
})
