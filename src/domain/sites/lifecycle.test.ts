import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { DELETION_GRACE_MS } from './lifecycle'

/**
 * Scale, delete, restore and the deletion reaper, in-process on a real SQLite store with a
 * manual clock and a recording container runtime (test/site-lifecycle.e2e.test.ts runs the same
 * on the compiled binary and Docker).
 */
const runtime = new RecordingRuntime()
const h = inProcess({ runtime })
afterAll(async () => {
  await h.close()
  runtime.close()
})

const HOUR = 3600_000
let ipCounter = 0
const ip = () => `198.19.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`
const uniq = (stem: string) => `${stem}-${Math.random().toString(36).slice(2, 8)}`
const sites = (path: string) => `/api/v1/sites/${path}`

/** Buys a site with a direct test payment and waits until it is active. */
async function buy(sku = 'svc_starter_monthly', key?: string): Promise<{ slug: string; key: string }> {
  const slug = uniq('lc')
  const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku }, key, headers: { 'x-forwarded-for': ip() } })
  const { id, checkout_secret: secret } = created.json.data
  await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug, buyer_email: 'lc@example.com' } })
  const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
  expect(done.status, done.text).toBe(201)
  await h.services.jobs.drain()
  return { slug, key: key ?? done.json.data.api_key }
}

const subscriptionOf = (slug: string) =>
  h.services.store.sqlite.query('SELECT s.* FROM subscriptions s JOIN sites x ON x.subscription_id = s.id WHERE x.slug = ?').get(slug) as
    { id: string; plan_slug: string; amount_cents: number; status: string; ended_at: number | null }

const siteRow = (slug: string) => h.services.store.sqlite.query('SELECT * FROM sites WHERE slug = ? ORDER BY created_at DESC LIMIT 1').get(slug) as
  { id: string; account_id: string; status: string; plan_slug: string; deletion_scheduled_for: number | null; deleted_at: number | null }

describe('POST /sites/{slug}/scale/', () => {
  it('moves a shared site to a vps plan: new limits and image, the subscription follows', async () => {
    const { slug, key } = await buy()
    const res = await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: 'business' } })
    await h.services.jobs.drain()
    expect(res.status, res.text).toBe(200)
    expect(res.json.data).toMatchObject({ slug, plan: 'business', hosting_type: 'vps', status: 'active', resources: { memory_mb: 1024, cpu_cores: 1, disk_gb: 20 } })
    const ensured = runtime.callsOf('ensureSite', slug).at(-1) as { spec: { image: string; memoryMb: number; cpuCores: number } }
    expect(ensured.spec).toMatchObject({ image: 'berth/php:1', memoryMb: 1024, cpuCores: 1 })
    expect(subscriptionOf(slug)).toMatchObject({ plan_slug: 'business', amount_cents: 2400, status: 'active' })
    expect((await h.call('GET', sites(`${slug}/`), { key })).json.data.plan).toBe('business')
  })

  it('the same plan again is a 200 no-op that touches no container', async () => {
    const { slug, key } = await buy()
    const before = runtime.callsOf('ensureSite', slug).length
    const res = await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: 'starter' } })
    await h.services.jobs.drain()
    expect(res.status).toBe(200)
    expect(res.json.data.plan).toBe('starter')
    expect(runtime.callsOf('ensureSite', slug)).toHaveLength(before)
  })

  it('refuses unknown and deprecated plans (422 new_plan), a missing body field, strangers (404) and keys without admin (403)', async () => {
    const { slug, key } = await buy()
    for (const plan of ['platinum', 'legacy-basic']) {
      const res = await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: plan } })
      await h.services.jobs.drain()
      expect(res.status).toBe(422)
      expect(res.json.error.param).toBe('new_plan')
    }
    const missing = await h.call('POST', sites(`${slug}/scale/`), { key, body: {} })
    expect(missing.status).toBe(422)
    expect(missing.json.error.param).toBe('new_plan')
    const stranger = await h.register()
    const other = await h.call('POST', sites(`${slug}/scale/`), { key: stranger.key, body: { new_plan: 'business' } })
    expect(other.status).toBe(404)
    const readOnly = (await h.call('POST', '/api/v1/keys/create/', { key, body: { scopes: ['read', 'write'] } })).json.data.api_key
    expect((await h.call('POST', sites(`${slug}/scale/`), { key: readOnly, body: { new_plan: 'business' } })).status).toBe(403)
    expect(siteRow(slug).plan_slug).toBe('starter')
  })

  it('on an agency subscription every site moves; a plan too small for them is 409; one site alone may change track', async () => {
    const first = await buy('svc_agency_monthly')
    const second = uniq('lc2')
    expect((await h.call('POST', sites('create/'), { key: first.key, body: { slug: second } })).status).toBe(201)
    await h.services.jobs.drain()
    const small = await h.call('POST', sites(`${first.slug}/scale/`), { key: first.key, body: { new_plan: 'business' } })
    await h.services.jobs.drain()
    expect(small.status).toBe(409)
    expect(small.json.error.param).toBe('new_plan')
    const res = await h.call('POST', sites(`${first.slug}/scale/`), { key: first.key, body: { new_plan: 'agency-vps' } })
    await h.services.jobs.drain()
    expect(res.status).toBe(200)
    expect(siteRow(second).plan_slug).toBe('agency-vps')
    expect((runtime.callsOf('ensureSite', second).at(-1) as { spec: { image: string } }).spec.image).toBe('berth/php:1')
    expect(subscriptionOf(first.slug)).toMatchObject({ plan_slug: 'agency-vps', amount_cents: 12900 })

    // A single-site plan becomes an agency plan: the subscription now has room for more sites.
    const solo = await buy()
    expect((await h.call('POST', sites(`${solo.slug}/scale/`), { key: solo.key, body: { new_plan: 'agency' } })).status).toBe(200)
    expect((await h.call('POST', sites('create/'), { key: solo.key, body: { slug: uniq('more') } })).status).toBe(201)
  })
})

describe('DELETE /sites/{slug}/delete/ and POST /sites/{slug}/restore/', () => {
  it('schedules deletion in 7 days, stops the container, shows the edge page, refuses writes; restore brings it back', async () => {
    const { slug, key } = await buy()
    const res = await h.call('DELETE', sites(`${slug}/delete/`), { key })
    expect(res.status, res.text).toBe(200)
    expect(res.json.data.status).toBe('pending_deletion')
    expect(Date.parse(res.json.data.deletion_scheduled_for)).toBe(h.clock.now() + DELETION_GRACE_MS)
    expect(runtime.callsOf('stopSite', slug)).toHaveLength(1)
    expect(runtime.sites.get(slug)?.running).toBe(false)
    expect((await h.services.directory.resolve(slug))?.state).toBe('pending_deletion')
    for (const [method, path, body] of [['DELETE', 'delete/', undefined], ['POST', 'scale/', { new_plan: 'business' }]] as const) {
      const again = await h.call(method, sites(`${slug}/${path}`), { key, body })
      expect(again.status, `${method} ${path}`).toBe(409)
      expect(again.json.error.code).toBe('CONFLICT')
    }
    // An invalid plan is named as such whatever the site's state (422 before 409).
    expect((await h.call('POST', sites(`${slug}/scale/`), { key, body: { new_plan: 'platinum' } })).status).toBe(422)
    expect((await h.call('GET', sites(`${slug}/`), { key })).json.data.status).toBe('pending_deletion')

    h.clock.advance(3 * 24 * HOUR)
    const restored = await h.call('POST', sites(`${slug}/restore/`), { key })
    await h.services.jobs.drain()
    expect(restored.status).toBe(200)
    expect(restored.json.data).toMatchObject({ status: 'active', deletion_scheduled_for: null })
    expect(runtime.sites.get(slug)?.running).toBe(true)
    expect((await h.services.directory.resolve(slug))?.state).toBe('serving')
    expect((await h.call('POST', sites(`${slug}/restore/`), { key })).status).toBe(409)
  })

  it('needs admin, hides other accounts’ sites, and refuses a site still provisioning', async () => {
    const { slug, key } = await buy()
    const stranger = await h.register()
    expect((await h.call('DELETE', sites(`${slug}/delete/`), { key: stranger.key })).status).toBe(404)
    expect((await h.call('POST', sites(`${slug}/restore/`), { key: stranger.key })).status).toBe(404)
    const readOnly = (await h.call('POST', '/api/v1/keys/create/', { key, body: { scopes: ['read'] } })).json.data.api_key
    expect((await h.call('DELETE', sites(`${slug}/delete/`), { key: readOnly })).status).toBe(403)
    h.services.store.sqlite.run("UPDATE sites SET status = 'provisioning' WHERE slug = ?", [slug])
    expect((await h.call('DELETE', sites(`${slug}/delete/`), { key })).status).toBe(409)
    h.services.store.sqlite.run("UPDATE sites SET status = 'active' WHERE slug = ?", [slug])
  })

  it('a failed site can be deleted, and restoring it gives it back failed, with no container', async () => {
    const { slug, key } = await buy()
    h.services.store.sqlite.run("UPDATE sites SET status = 'failed', error = 'Provisioning failed: test' WHERE slug = ?", [slug])
    expect((await h.call('DELETE', sites(`${slug}/delete/`), { key })).status).toBe(200)
    const ensures = runtime.callsOf('ensureSite', slug).length
    const restored = await h.call('POST', sites(`${slug}/restore/`), { key })
    await h.services.jobs.drain()
    expect(restored.json.data).toMatchObject({ status: 'failed', error: 'Provisioning failed: test' })
    expect(runtime.callsOf('ensureSite', slug)).toHaveLength(ensures)
  })
})

describe('the deletion reaper', () => {
  it('keeps a site at 6 days 23 hours and removes it at 7 days: files, keys, subscription, listing, slug, audit trail', async () => {
    const { slug, key } = await buy()
    const site = siteRow(slug)
    const auditOf = (id: string) => h.services.store.sqlite.query<{ n: number }, [string]>('SELECT count(*) n FROM audit_events WHERE site_id = ?').get(id)!.n
    h.services.audit.begin({ siteId: site.id, kind: 'shell', actor: { kind: 'admin', user: 'root' }, command: null }).end({ exitCode: 0 })
    const siteKey = h.services.keys.issue(site.account_id, 'claimed', ['read', 'write'], site.id).api_key
    expect((await h.call('GET', sites(`${slug}/`), { key: siteKey })).status).toBe(200)
    expect((await h.call('DELETE', sites(`${slug}/delete/`), { key })).status).toBe(200)

    h.clock.advance(DELETION_GRACE_MS - HOUR)
    expect((await h.services.reaper.reap()).reaped).not.toContain(slug)
    expect(siteRow(slug).status).toBe('pending_deletion')
    expect(runtime.callsOf('removeSite', slug)).toHaveLength(0)
    expect((await h.call('GET', sites(`${slug}/`), { key: siteKey })).status).toBe(200)
    expect(auditOf(site.id)).toBe(1)

    h.clock.advance(HOUR)
    // Past the deadline a restore is refused: the site is the reaper's now.
    expect((await h.call('POST', sites(`${slug}/restore/`), { key })).status).toBe(409)
    const report = await h.services.reconciler.reconcile()
    expect(report.reaped).toContain(slug)
    expect(runtime.callsOf('removeSite', slug)).toEqual([{ op: 'removeSite', slug, volume: true }])
    expect(runtime.sites.has(slug)).toBe(false)
    expect(siteRow(slug)).toMatchObject({ status: 'deleted', deleted_at: h.clock.now() })
    expect((await h.call('GET', sites(`${slug}/`), { key: siteKey })).status).toBe(401)
    expect((await h.call('GET', sites(`${slug}/`), { key })).status).toBe(404)
    expect((await h.call('GET', sites(''), { key })).json.data.map((s: { slug: string }) => s.slug)).not.toContain(slug)
    expect(subscriptionOf(slug)).toMatchObject({ status: 'ended', ended_at: h.clock.now() })
    expect(h.services.sites.slugUnavailable(slug)).toBeUndefined()
    expect((await h.services.directory.resolve(slug))).toBeNull()
    expect(auditOf(site.id)).toBe(0)
    // Reaping again is a no-op.
    expect((await h.services.reaper.reap()).reaped).toEqual([])
  })

  it('leaves an agency subscription active while another of its sites lives', async () => {
    const first = await buy('svc_agency_monthly')
    const second = uniq('keep')
    await h.call('POST', sites('create/'), { key: first.key, body: { slug: second } })
    await h.services.jobs.drain()
    await h.call('DELETE', sites(`${first.slug}/delete/`), { key: first.key })
    h.clock.advance(DELETION_GRACE_MS)
    expect((await h.services.reaper.reap()).reaped).toContain(first.slug)
    expect(siteRow(first.slug).status).toBe('deleted')
    expect(subscriptionOf(second)).toMatchObject({ status: 'active', ended_at: null })
  })

  it('a site whose removal fails stays pending and is reaped on a later pass', async () => {
    const { slug, key } = await buy()
    await h.call('DELETE', sites(`${slug}/delete/`), { key })
    h.clock.advance(DELETION_GRACE_MS)
    const remove = runtime.removeSite.bind(runtime)
    runtime.removeSite = async () => {
      throw new Error('engine hiccup')
    }
    try {
      const report = await h.services.reaper.reap()
      expect(report.reaped).not.toContain(slug)
      expect(report.errors.join()).toContain(slug)
      expect(siteRow(slug).status).toBe('pending_deletion')
    } finally {
      runtime.removeSite = remove
    }
    expect((await h.services.reaper.reap()).reaped).toContain(slug)
    expect(siteRow(slug).status).toBe('deleted')
  })
})
