import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { HSTS_MAX_AGE_MAX } from './model'

/**
 * POST /sites/{slug}/settings/: the owner's HSTS setting, shown in the site's view and handed to
 * the edge (the directory's target), in-process on a real SQLite store. The header on the wire,
 * over HTTPS only, is test/https-edge.e2e.test.ts's.
 */
const runtime = new RecordingRuntime()
const h = inProcess({ runtime })
afterAll(async () => {
  await h.close()
  runtime.close()
})

let ipCounter = 0
const ip = () => `198.18.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`

async function buy(): Promise<{ slug: string; key: string }> {
  const slug = `hsts-${Math.random().toString(36).slice(2, 8)}`
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': ip() } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug, buyer_email: 'hsts@example.com' } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  await h.services.jobs.drain()
  return { slug, key: done.json.data.api_key }
}

const settings = (slug: string, key: string, body: unknown) => h.call('POST', `/api/v1/sites/${slug}/settings/`, { key, body })

describe('POST /sites/{slug}/settings/ (hsts_max_age)', () => {
  it('is off by default; set, it shows in the site view and reaches the edge; null turns it off again', async () => {
    const { slug, key } = await buy()
    expect((await h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data.hsts_max_age).toBeNull()
    expect((await h.services.directory.resolve(slug))?.hsts).toBeUndefined()

    const set = await settings(slug, key, { hsts_max_age: 31536000 })
    expect(set.status, set.text).toBe(200)
    expect(set.json.data).toMatchObject({ slug, hsts_max_age: 31536000 })
    expect((await h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data.hsts_max_age).toBe(31536000)
    expect((await h.call('GET', '/api/v1/sites/', { key })).json.data.find((s: { slug: string }) => s.slug === slug).hsts_max_age).toBe(31536000)
    expect((await h.services.directory.resolve(slug))?.hsts).toBe('max-age=31536000')

    // 0 is a setting of its own: it tells browsers that saw the header to forget it.
    expect((await settings(slug, key, { hsts_max_age: 0 })).json.data.hsts_max_age).toBe(0)
    expect((await h.services.directory.resolve(slug))?.hsts).toBe('max-age=0')

    expect((await settings(slug, key, { hsts_max_age: null })).json.data.hsts_max_age).toBeNull()
    expect((await h.services.directory.resolve(slug))?.hsts).toBeUndefined()
  })

  it('refuses values out of range, of another type, a missing or unknown field (422 hsts_max_age), strangers (404), read-only keys (403)', async () => {
    const { slug, key } = await buy()
    for (const body of [{ hsts_max_age: -1 }, { hsts_max_age: HSTS_MAX_AGE_MAX + 1 }, { hsts_max_age: '3600' }, { hsts_max_age: 1.5 }, {}]) {
      const res = await settings(slug, key, body)
      expect(res.status, JSON.stringify(body)).toBe(422)
      expect(res.json.error.code).toBe('VALIDATION_ERROR')
      expect(res.json.error.param, JSON.stringify(body)).toBe('hsts_max_age')
    }
    const unknown = await settings(slug, key, { hsts_max_age: 60, hsts_preload: true })
    expect(unknown.status).toBe(422)
    expect(unknown.json.error.param).toBe('hsts_preload')
    expect((await settings(slug, key, { hsts_max_age: HSTS_MAX_AGE_MAX })).status).toBe(200)

    const stranger = await h.register()
    expect((await settings(slug, stranger.key, { hsts_max_age: 60 })).status).toBe(404)
    const readOnly = (await h.call('POST', '/api/v1/keys/create/', { key, body: { scopes: ['read'] } })).json.data.api_key
    expect((await settings(slug, readOnly, { hsts_max_age: 60 })).status).toBe(403)
    expect((await h.call('GET', `/api/v1/sites/${slug}/`, { key })).json.data.hsts_max_age).toBe(HSTS_MAX_AGE_MAX)
  })
})
