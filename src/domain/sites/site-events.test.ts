import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buyInProcess } from '../../../test/helpers/home-runtime'
import { inProcess } from '../../../test/helpers/in-process'
import { RecordingRuntime } from '../../../test/helpers/recording-runtime'
import { accountOfKey, storedEvents } from '../../../test/helpers/events-read'
import { until } from '../../../test/helpers/until'
import { followContainerEvents } from '../../compose'
import type { SiteSpec } from '../../drivers/runtime/types'
import { DELETION_GRACE_MS } from './lifecycle'
import { SiteEvents, siteEventOf } from './site-events'
import { SitesRepository } from './repository'
import { EventLog } from '../events'

/** A recording runtime whose sites named `broken-...` never start (provisioning fails). */
class BrokenStarts extends RecordingRuntime {
  override async ensureSite(spec: SiteSpec) {
    if (spec.slug.startsWith('broken-')) throw new Error('the engine refused the container')
    return super.ensureSite(spec)
  }
}

// The sites' events (issue 41) through the whole composition in-process: each recorded with the
// status change it tells of, with the site's view as data.
const runtime = new BrokenStarts()
const h = inProcess({ runtime })
let unfollow: () => void
beforeAll(() => {
  unfollow = followContainerEvents(h.services)
})
afterAll(async () => {
  unfollow()
  await h.close()
  runtime.close()
})

const ofSite = (key: string, slug: string) => storedEvents(h, accountOfKey(h, key)).filter((e) => e.site_slug === slug && e.type.startsWith('site.'))

describe('site events', () => {
  it('site.active once provisioning is done, with the site view as data', async () => {
    const { slug, key, siteId } = await buyInProcess(h, 'svc_starter_monthly', 'ev')
    const events = ofSite(key, slug)
    expect(events.map((e) => e.type)).toEqual(['site.active'])
    expect(events[0]).toMatchObject({ site_id: siteId, site_slug: slug })
    expect(events[0]!.data).toMatchObject({ slug, plan: 'starter', status: 'active', error: null, suspension: null })
  })

  it('site.provisioning_failed when the last attempt fails, with the reason in error', async () => {
    const slug = `broken-${Math.random().toString(36).slice(2, 8)}`
    const created = await h.call('POST', '/api/v1/acp/checkouts/', { body: { sku: 'svc_starter_monthly' }, headers: { 'x-forwarded-for': '198.19.7.7' } })
    const { id, checkout_secret: secret } = created.json.data
    await h.call('POST', `/api/v1/acp/checkouts/${id}/update/?checkout_secret=${secret}`, { body: { requested_slug: slug } })
    const done = await h.call('POST', `/api/v1/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: { payment_method: 'processor_payment_method', payment_method_id: 'pm_card_visa' } })
    expect(done.status, done.text).toBe(201)
    for (let i = 0; i < 6 && h.services.store.sqlite.query("SELECT 1 FROM sites WHERE slug = ? AND status = 'failed'").get(slug) === null; i++) {
      await h.services.jobs.drain()
      h.clock.advance(3_600_000)
      h.services.jobs.kick()
    }
    const events = ofSite(done.json.data.api_key, slug)
    expect(events.map((e) => e.type)).toEqual(['site.provisioning_failed'])
    expect(events[0]!.data).toMatchObject({ slug, status: 'failed' })
    expect(events[0]!.data.error).toContain('the engine refused the container')
  })

  it('site.suspended and site.resumed for the hoster\'s suspension; a second suspension of a suspended site tells nothing', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'ev')
    await h.admin.sites.suspend(slug, 'abuse report')
    await h.admin.sites.suspend(slug, 'again')
    await h.admin.sites.resume(slug)
    const events = ofSite(key, slug)
    expect(events.map((e) => e.type)).toEqual(['site.active', 'site.suspended', 'site.resumed'])
    expect(events[1]!.data).toMatchObject({ status: 'suspended', suspension: { by: 'admin', reason: 'abuse report' } })
    // Its container is being started again: the view says so until it answers.
    expect(events[2]!.data).toMatchObject({ suspension: null })
    expect(['active', 'recovering']).toContain(events[2]!.data.status)
  })

  it('site.down when its container dies, site.up once it is back; none for a stop of Berth\'s own', async () => {
    const { slug, key, siteId } = await buyInProcess(h, 'svc_starter_monthly', 'ev')
    runtime.sites.get(slug)!.running = false
    runtime.emit({ action: 'die', slug, siteId, containerId: 'c' })
    await until(() => ofSite(key, slug).some((e) => e.type === 'site.up'))
    const events = ofSite(key, slug)
    expect(events.map((e) => e.type)).toEqual(['site.active', 'site.down', 'site.up'])
    expect(events[1]!.data).toMatchObject({ slug, reason: 'Its container stopped; it is being brought back.' })
    // A suspended site's container stopping is Berth's own doing.
    await h.admin.sites.suspend(slug, 'quiet')
    runtime.emit({ action: 'die', slug, siteId, containerId: 'c' })
    await Bun.sleep(50)
    expect(ofSite(key, slug).map((e) => e.type)).toEqual(['site.active', 'site.down', 'site.up', 'site.suspended'])
  })

  it('site.deleted when the grace period ends and the site is removed (not at the request, which can be undone)', async () => {
    const { slug, key } = await buyInProcess(h, 'svc_starter_monthly', 'ev')
    const deleted = await h.call('DELETE', `/api/v1/sites/${slug}/delete/`, { key })
    expect(deleted.status, deleted.text).toBe(200)
    expect(ofSite(key, slug).map((e) => e.type)).toEqual(['site.active'])
    h.clock.advance(DELETION_GRACE_MS + 1)
    await h.services.reaper.reap()
    const events = ofSite(key, slug)
    expect(events.map((e) => e.type)).toEqual(['site.active', 'site.deleted'])
    expect(events[1]!.data).toMatchObject({ slug, status: 'deleted' })
  })

  it('a status change rolled back with its transaction leaves neither the change nor its event', async () => {
    const { slug, key, siteId } = await buyInProcess(h, 'svc_starter_monthly', 'ev')
    const store = h.services.store
    const sites = new SitesRepository(store)
    new SiteEvents({ events: new EventLog({ store, clock: h.clock, log: h.log }), view: (site) => ({ slug: site.slug, status: site.status }) as never }).watch(sites)
    expect(() => store.write(() => {
      sites.suspend(siteId, 'admin', 'rolled back', h.clock.now())
      throw new Error('something after the change failed')
    })).toThrow('something after the change failed')
    expect(sites.find(siteId)!.status).toBe('active')
    expect(ofSite(key, slug).map((e) => e.type)).toEqual(['site.active'])
    sites.suspend(siteId, 'admin', 'kept', h.clock.now())
    expect(ofSite(key, slug).map((e) => e.type)).toEqual(['site.active', 'site.suspended'])
  })
})

describe('siteEventOf', () => {
  it('names the event of each status change, and none for moves that have none', () => {
    expect(siteEventOf({ status: 'provisioning' }, { status: 'active' })).toBe('site.active')
    expect(siteEventOf({ status: 'provisioning' }, { status: 'failed' })).toBe('site.provisioning_failed')
    expect(siteEventOf({ status: 'active' }, { status: 'suspended' })).toBe('site.suspended')
    expect(siteEventOf({ status: 'suspended' }, { status: 'active' })).toBe('site.resumed')
    expect(siteEventOf({ status: 'pending_deletion' }, { status: 'deleted' })).toBe('site.deleted')
    expect(siteEventOf({ status: 'active' }, { status: 'pending_deletion' })).toBeNull()
    expect(siteEventOf({ status: 'pending_deletion' }, { status: 'active' })).toBeNull()
    expect(siteEventOf({ status: 'pending_deletion' }, { status: 'failed' })).toBeNull()
    expect(siteEventOf({ status: 'pending_deletion' }, { status: 'suspended' })).toBeNull()
    expect(siteEventOf({ status: 'suspended' }, { status: 'suspended' })).toBeNull()
  })
})
