import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buyInProcess as buy, inProcessWithHomes } from '../../../test/helpers/home-runtime'
import { accountOfKey, storedEvents } from '../../../test/helpers/events-read'

/**
 * backup.completed and backup.failed (issue 41), in-process as archives.test.ts runs archives
 * (real GNU tar on real homes, the real archive store and job runner): recorded with the
 * archive's turn to ready or failed, holding its view; a restore's return to ready is not one.
 */
const { runtime, h } = inProcessWithHomes()
const path = (slug: string, rest = '') => `/api/v1/sites/${slug}/${rest}`
const backupEvents = (key: string, slug: string) => storedEvents(h, accountOfKey(h, key)).filter((e) => e.type.startsWith('backup.') && e.site_slug === slug)

describe('backup events', () => {
  it('backup.completed when a snapshot is stored, with its view; its restore records nothing more', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_business_monthly', 'bk')
    const taken = await h.call('POST', path(slug, 'snapshot/'), { key })
    expect(taken.status, taken.text).toBe(200)
    expect(backupEvents(key, slug)).toEqual([])
    await h.services.jobs.drain()
    const events = backupEvents(key, slug)
    expect(events.map((e) => e.type)).toEqual(['backup.completed'])
    expect(events[0]).toMatchObject({ site_id: siteId, data: { id: taken.json.data.id, kind: 'snapshot', status: 'ready', error: null, copies: ['local'] } })
    expect(events[0]!.data.size_bytes).toBeGreaterThan(0)
    expect((await h.call('POST', path(slug, `snapshots/${taken.json.data.id}/restore/`), { key })).status).toBe(200)
    await h.services.jobs.drain()
    expect(backupEvents(key, slug).map((e) => e.type)).toEqual(['backup.completed'])
  })

  it('backup.failed when the archive cannot be made, with its error', async () => {
    const { slug, key } = await buy(h, 'svc_business_monthly', 'bk')
    const original = runtime.homePath.bind(runtime)
    runtime.homePath = async () => join(runtime.root, 'does-not-exist', slug)
    try {
      const id = (await h.call('POST', path(slug, 'snapshot/'), { key })).json.data.id
      const deadline = Date.now() + 15_000
      while (backupEvents(key, slug).length === 0 && Date.now() < deadline) {
        await Bun.sleep(50)
        h.clock.advance(6000)
        h.services.jobs.kick()
      }
      const events = backupEvents(key, slug)
      expect(events.map((e) => e.type)).toEqual(['backup.failed'])
      expect(events[0]!.data).toMatchObject({ id, kind: 'snapshot', status: 'failed', copies: [] })
      expect(events[0]!.data.error).toContain(id)
      expect(events[0]!.data.error).not.toContain(runtime.root)
    } finally {
      runtime.homePath = original
    }
  })
})
