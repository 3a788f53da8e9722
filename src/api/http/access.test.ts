import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'

/**
 * The one rule of access.ts: who may touch what is settled before the request is validated.
 * A stranger (another account's key, a wrong checkout secret) gets 404 whatever the body or
 * query, so a 422 never tells them that the site or session exists.
 */
const h = inProcess()
afterAll(() => h.close())

const V1 = '/api/v1'
let site: { slug: string; key: string }
let stranger: string

beforeAll(async () => {
  site = await buyInProcess(h, 'svc_business_monthly', 'acc')
  stranger = (await h.register()).key
})

/** Every route on one site, from the live route table, with the site's slug filled in. */
function siteRoutes(): { method: string; path: string }[] {
  return (h.app.routes as { method: string; path: string }[])
    .filter((r) => r.path.startsWith(`${V1}/sites/:tenant_slug/`) && r.path.endsWith('/'))
    .map((r) => ({ method: r.method, path: r.path.replace(':tenant_slug', site.slug).replace(/:(\w+)/g, (_, name: string) => (name.endsWith('_id') ? 'not-a-uuid' : 'x')) }))
}

describe('site routes: another account learns nothing from validation', () => {
  it('covers every site route', () => {
    expect(siteRoutes().length).toBeGreaterThan(25)
  })

  it('answers 404 to another account for an invalid body, query or path parameter, on every site route', async () => {
    const wrong: string[] = []
    for (const r of siteRoutes()) {
      const body = r.method === 'GET' ? undefined : { bogus_field: '\u0000', path: 42, content: 7 }
      for (const suffix of ['', '?bogus=1&lines=0&days=x']) {
        const res = await h.call(r.method, `${r.path}${suffix}`, { key: stranger, body })
        if (res.status !== 404 || res.json.error.param !== 'tenant_slug') wrong.push(`${r.method} ${r.path}${suffix}: ${res.status} ${res.json?.error?.param}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it('still validates for the owner: the same requests answer 422 naming the parameter', async () => {
    const res = await h.call('POST', `${V1}/sites/${site.slug}/files/mkdir/`, { key: site.key, body: { path: 'public/new', bogus_field: 1 } })
    expect(res.status).toBe(422)
    expect(res.json.error.param).toBe('bogus_field')
    const query = await h.call('GET', `${V1}/sites/${site.slug}/logs/?lines=0`, { key: site.key })
    expect(query.status).toBe(422)
    expect(query.json.error.param).toBe('lines')
  })
})

describe('checkout sessions: a wrong secret is 404 whatever the body', () => {
  let session: { id: string; secret: string }

  beforeAll(async () => {
    const created = await h.call('POST', `${V1}/acp/checkouts/`, { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.51.100.7' } })
    expect(created.status).toBe(201)
    session = { id: created.json.data.id, secret: created.json.data.checkout_secret }
  })

  it.each([
    ['update', { requested_slug: 'NOT A SLUG', buyer_email: 42 }],
    ['complete', { payment_method: 'bitcoin', payment_method_id: ['x'] }],
    ['cancel', { reason: 'a field the route does not take' }],
  ])('%s with a wrong secret, a missing one, and the header form: 404 naming checkout_id', async (action, body) => {
    for (const opts of <{ path: string; headers: Record<string, string> }[]>[
      { path: `${V1}/acp/checkouts/${session.id}/${action}/?checkout_secret=cks_wrong`, headers: {} },
      { path: `${V1}/acp/checkouts/${session.id}/${action}/`, headers: {} },
      { path: `${V1}/acp/checkouts/${session.id}/${action}/`, headers: { 'x-checkout-secret': 'cks_wrong' } },
      { path: `${V1}/acp/checkouts/not-a-uuid/${action}/?checkout_secret=cks_wrong`, headers: {} },
    ]) {
      const res = await h.call('POST', opts.path, { body, headers: opts.headers })
      expect(res.status, opts.path).toBe(404)
      expect(res.json.error).toMatchObject({ code: 'NOT_FOUND', param: 'checkout_id' })
    }
    // With the right secret, the same body is validated (422), and the session is unchanged.
    const own = await h.call('POST', `${V1}/acp/checkouts/${session.id}/${action}/?checkout_secret=${session.secret}`, { body })
    expect(own.status).toBe(422)
    const after = await h.call('GET', `${V1}/acp/checkouts/${session.id}/`, { headers: { 'x-checkout-secret': session.secret } })
    expect(after.json.data.status).toBe('not_ready')
  })

  it('answers a poll with a wrong secret and a bad query 404 too', async () => {
    const res = await h.call('GET', `${V1}/acp/checkouts/${session.id}/?checkout_secret=cks_wrong&bogus=1`)
    expect(res.status).toBe(404)
  })
})
