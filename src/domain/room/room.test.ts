import { describe, expect, it } from 'vitest'
import { checkDisk } from '../../cli/doctor/box-checks'
import { loadConfig } from '../../config/config'
import type { BoxProbes } from '../../drivers/host/types'
import { DomainError } from '../errors'
import { BoxRoom, GIB, thresholdOf } from './room'

/**
 * The reserve's arithmetic and its refusal on disks this machine cannot be given (a terabyte, a
 * full one); the real filesystem under the compiled binary is test/box-room.e2e.test.ts.
 */
const TB = 1000 * GIB
const roomOf = (freeBytes: number, totalBytes: number, settings = { reserveBytes: 2 * GIB, reservePercent: 5 }) =>
  new BoxRoom({ disk: () => ({ freeBytes, totalBytes }), settings, sitesDiskGb: () => 45 })

describe('the box keeps room for itself', () => {
  it('reserves the larger of disk.reserve_bytes and disk.reserve_percent; either at 0 is that half off', () => {
    expect(thresholdOf({ reserveBytes: 2 * GIB, reservePercent: 5 }, 20 * GIB)).toBe(2 * GIB)
    expect(thresholdOf({ reserveBytes: 2 * GIB, reservePercent: 5 }, TB)).toBe(50 * GIB)
    expect(thresholdOf({ reserveBytes: 0, reservePercent: 5 }, 20 * GIB)).toBe(GIB)
    expect(thresholdOf({ reserveBytes: 0, reservePercent: 0 }, TB)).toBe(0)
  })

  it('refuses growth under the reserve with 507 insufficient_storage saying what to do, and lets it through at the reserve', () => {
    expect(() => roomOf(2 * GIB, 40 * GIB).ensureRoom('new sites')).not.toThrow()
    expect(roomOf(2 * GIB, 40 * GIB).isLow()).toBe(false)
    const low = roomOf(49 * GIB, TB)
    expect(low.isLow()).toBe(true)
    let err: unknown
    try {
      low.ensureRoom('snapshots')
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(DomainError)
    expect(err).toMatchObject({ kind: 'insufficient_storage', field: null })
    expect((err as Error).message).toBe('The server is low on disk space (49.0 GiB free, under the 50.0 GiB it keeps for itself), so it takes no snapshots until its hoster frees space; existing sites keep working. Retry later, or ask the hoster (getStatus shows disk.low_space).')
    expect(low.figures()).toEqual({ freeBytes: 49 * GIB, totalBytes: TB, thresholdBytes: 50 * GIB, low: true, sitesDiskGb: 45 })
  })

  it("berth doctor: FAIL under the reserve, WARN under twice it, with the sites' disk_gb against the disk", () => {
    const probes = (freeBytes: number, totalBytes: number) => ({ existingAncestor: (d: string) => d, diskSpace: () => ({ freeBytes, totalBytes }) }) as unknown as BoxProbes
    const config = loadConfig({ file: null, env: { BERTH_SERVER_DATA_DIR: '/var/lib/berth' } })
    expect(checkDisk(config, probes(1.5 * GIB, 20 * GIB), 30)).toMatchObject({
      status: 'FAIL',
      detail: "1.5 GiB free of 20.0 GiB (8 %) on the disk of /var/lib/berth; the sites' plans hold 30 GiB (disk_gb), 150 % of the disk: under the reserve of 2.0 GiB, so berth serve refuses new sites, snapshots and backups (507)",
    })
    expect(checkDisk(config, probes(3 * GIB, 20 * GIB), null).status).toBe('WARN')
    expect(checkDisk(config, probes(60 * GIB, TB), null).status).toBe('WARN')
    expect(checkDisk(config, probes(200 * GIB, TB), 5)).toMatchObject({ status: 'PASS', detail: "200.0 GiB free of 1000.0 GiB (20 %) on the disk of /var/lib/berth; the sites' plans hold 5 GiB (disk_gb), 1 % of the disk; the reserve is 50.0 GiB" })
  })
})
