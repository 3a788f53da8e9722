import { describe, expect, it } from 'vitest'
import { buyInProcess as buy, inProcessWithHomes } from '../../../test/helpers/home-runtime'

/**
 * Under the box's reserve the daily backups wait (a backup grows the archives on the data folder's
 * disk) and start again once there is room; the backups kept stay. The reserve is the config's
 * (disk.reserve_bytes), raised past the disk's size and lowered again on the live config object
 * the room reads at each call; the refusals of the API under a real full filesystem are in
 * test/box-room.e2e.test.ts.
 */
describe('backups under the reserve', () => {
  const { h } = inProcessWithHomes()

  it('are not queued while free space is under the reserve, and are again once there is room', async () => {
    const site = await buy(h, 'svc_starter_monthly', 'rm')
    const disk = h.services.config.disk
    disk.reserveBytes = Number.MAX_SAFE_INTEGER
    expect(h.services.archives.scheduleBackups()).toBe(0)
    expect((await h.call('GET', `/api/v1/status/`)).json.data.disk.low_space).toBe(true)
    expect((await h.call('GET', `/api/v1/sites/${site.slug}/backups/`, { key: site.key })).json.data).toEqual([])
    disk.reserveBytes = 0
    disk.reservePercent = 0
    expect(h.services.archives.scheduleBackups()).toBe(1)
    await h.services.jobs.drain()
    expect((await h.call('GET', `/api/v1/sites/${site.slug}/backups/`, { key: site.key })).json.data.map((b: { status: string }) => b.status)).toEqual(['ready'])
  })
})
