import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import type { ContainerRuntime, SiteStats } from '../../drivers/runtime/types'
import { measureDiskUsage } from '../../drivers/files/disk-usage'
import { EdgeMetrics } from '../../edge/metrics'
import { ManualClock } from '../../lib/clock'
import { memoryLogger } from '../../lib/logger'
import { migrate } from '../../store/migrate'
import { openStore } from '../../store/store'
import type { SiteRow } from '../../store/schema'
import { MetricsRepository } from './repository'
import { SiteMetricsService } from './service'

/**
 * The metrics service on a real SQLite store with migrations applied and the real EdgeMetrics;
 * only the site lookup and the container's stats are stand-ins (test/site-operations.e2e.test.ts
 * covers them on Docker).
 */
const dir = mkdtempSync(join(tmpdir(), 'metrics-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const DAY = 86_400_000

function setup() {
  const store = openStore(join(dir, `${crypto.randomUUID()}.db`))
  migrate(store)
  const clock = new ManualClock(Date.UTC(2026, 10, 20, 12))
  const edge = new EdgeMetrics()
  const home = join(dir, crypto.randomUUID())
  mkdirSync(home)
  writeFileSync(join(home, 'index.html'), 'x'.repeat(20_000))
  let stats: SiteStats | null = { cpuPercent: 1.5, memoryBytes: 10_000_000, memoryLimitBytes: 536_870_912 }
  const runtime = { stats: async () => stats, homePath: async () => home } as unknown as ContainerRuntime
  const repo = new MetricsRepository(store)
  const service = new SiteMetricsService(clock, repo, edge, runtime, memoryLogger(), measureDiskUsage)
  const get = (days?: number) => service.get({ id: 'site-1', slug: 'one' } as SiteRow, days)
  const hit = (status: number, durationMs = 2, at = clock.now()) => edge.record('site-1', { status, bytesOut: 100, durationMs, at })
  return { store, clock, edge, service, repo, get, hit, setStats: (s: SiteStats | null) => (stats = s) }
}

describe('SiteMetricsService', () => {
  it('shows a request at once, moves it to the store on persist, and never counts it twice', async () => {
    const m = setup()
    m.hit(200)
    m.hit(404)
    const first = await m.get(1)
    expect(first.days).toEqual([expect.objectContaining({ date: '2026-11-20', requests: 2, bytes_out: 200, status_2xx: 1, status_4xx: 1 })])
    m.service.persist()
    expect(m.edge.snapshot('site-1')).toEqual([])
    expect((await m.get(1)).days[0]).toMatchObject({ requests: 2, status_2xx: 1, status_4xx: 1 })
    m.hit(500)
    m.service.persist()
    m.hit(301)
    expect((await m.get(1)).days[0]).toMatchObject({ requests: 4, bytes_out: 400, status_2xx: 1, status_3xx: 1, status_4xx: 1, status_5xx: 1 })
  })

  it('lists every day of the period oldest first, zeros included, and totals it', async () => {
    const m = setup()
    m.hit(200, 2, m.clock.now() - 2 * DAY)
    m.hit(200, 2, m.clock.now() - 10 * DAY) // outside a 7-day window
    m.service.persist()
    m.hit(200)
    const res = await m.get()
    expect(res.from).toBe('2026-11-14')
    expect(res.to).toBe('2026-11-20')
    expect(res.days.map((d) => [d.date, d.requests])).toEqual([
      ['2026-11-14', 0], ['2026-11-15', 0], ['2026-11-16', 0], ['2026-11-17', 0], ['2026-11-18', 1], ['2026-11-19', 0], ['2026-11-20', 1],
    ])
    expect(res.days[0]).toEqual({ date: '2026-11-14', requests: 0, bytes_out: 0, status_2xx: 0, status_3xx: 0, status_4xx: 0, status_5xx: 0, p50_ms: 0, p95_ms: 0 })
    expect(res.totals).toMatchObject({ requests: 2, bytes_out: 200, status_2xx: 2 })
    expect((await m.get(90)).days).toHaveLength(90)
    expect((await m.get(90)).totals.requests).toBe(3)
  })

  it('merges the latency of stored and in-memory requests into one day', async () => {
    const m = setup()
    for (let i = 0; i < 10; i++) m.hit(200, 1)
    m.service.persist()
    for (let i = 0; i < 10; i++) m.hit(200, 100)
    const day = (await m.get(1)).days[0]!
    // Half the requests took 1 ms, half 100 ms: the median sits at the fast ones' bucket edge,
    // the 95th percentile among the slow ones (buckets are within 19 %).
    expect(day.p50_ms).toBeLessThan(1.2)
    expect(day.p95_ms).toBeGreaterThan(80)
    expect(day.p95_ms).toBeLessThan(120)
  })

  it('moves days on with the clock and prunes what is older than 100 days', async () => {
    const m = setup()
    m.hit(200)
    m.service.persist()
    m.clock.advance(101 * DAY)
    m.service.persist()
    expect(m.repo.range('site-1', '2000-01-01', '2100-01-01')).toEqual([])
    expect((await m.get(1)).days[0]).toMatchObject({ date: '2027-03-01', requests: 0 })
  })

  it('reports the container now, with nulls for a stopped one but its disk still measured', async () => {
    const m = setup()
    const running = (await m.get(1)).current
    expect(running).toMatchObject({ cpu_percent: 1.5, memory_bytes: 10_000_000, memory_limit_bytes: 536_870_912 })
    expect(running.disk_bytes).toBeGreaterThanOrEqual(20_000)
    m.setStats(null)
    m.clock.advance(10_000) // past the stats cache
    expect((await m.get(1)).current).toEqual({ cpu_percent: null, memory_bytes: null, memory_limit_bytes: null, disk_bytes: running.disk_bytes, disk_limit_bytes: null })
  })
})
