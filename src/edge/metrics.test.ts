import { describe, expect, it } from 'vitest'
import { DURATION_BUCKETS_S, EdgeMetrics, LATENCY_BUCKETS_MS, latencyPercentile, mergeLatency } from './metrics'

const DAY1 = Date.UTC(2026, 10, 21, 23, 59, 59, 999)
const DAY2 = Date.UTC(2026, 10, 22, 0, 0, 0, 0)

describe('EdgeMetrics', () => {
  it('aggregates requests, bytes and status classes per site and UTC day', () => {
    const m = new EdgeMetrics()
    m.record('a', { status: 200, bytesOut: 100, durationMs: 2, at: DAY1 })
    m.record('a', { status: 204, bytesOut: 0, durationMs: 2, at: DAY1 })
    m.record('a', { status: 304, bytesOut: 0, durationMs: 1, at: DAY1 })
    m.record('a', { status: 404, bytesOut: 10, durationMs: 1, at: DAY2 })
    m.record('a', { status: 503, bytesOut: 20, durationMs: 1, at: DAY2 })
    m.record('b', { status: 200, bytesOut: 5, durationMs: 1, at: DAY2 })
    expect(m.snapshot('a').map(({ latency, p50Ms, p95Ms, ...rest }) => rest)).toEqual([
      { siteId: 'a', day: '2026-11-21', requests: 3, bytesOut: 100, status2xx: 2, status3xx: 1, status4xx: 0, status5xx: 0 },
      { siteId: 'a', day: '2026-11-22', requests: 2, bytesOut: 30, status2xx: 0, status3xx: 0, status4xx: 1, status5xx: 1 },
    ])
    expect(m.snapshot('b')).toHaveLength(1)
    expect(m.snapshot('nobody')).toEqual([])
  })

  it('goes back to an earlier day when a late record arrives', () => {
    const m = new EdgeMetrics()
    m.record('a', { status: 200, bytesOut: 1, durationMs: 1, at: DAY2 })
    m.record('a', { status: 200, bytesOut: 1, durationMs: 1, at: DAY1 })
    m.record('a', { status: 200, bytesOut: 1, durationMs: 1, at: DAY2 })
    expect(m.snapshot('a').map((d) => [d.day, d.requests])).toEqual([['2026-11-21', 1], ['2026-11-22', 2]])
  })

  it('drain hands everything over once and starts afresh; snapshot clears nothing', () => {
    const m = new EdgeMetrics()
    m.record('a', { status: 200, bytesOut: 1, durationMs: 1, at: DAY1 })
    m.record('b', { status: 200, bytesOut: 1, durationMs: 1, at: DAY2 })
    m.snapshot('a')[0]!.latency[0] = 999
    expect(m.snapshot('a')[0]!.latency[0]).not.toBe(999)
    const drained = m.drain()
    expect(drained.map((d) => [d.siteId, d.day, d.requests])).toEqual([['a', '2026-11-21', 1], ['b', '2026-11-22', 1]])
    expect(m.drain()).toEqual([])
    expect(m.snapshot('a')).toEqual([])
  })

  it('estimates p50 and p95 within a bucket of the true values', () => {
    const m = new EdgeMetrics()
    // 1..1000 ms, one request each: p50 ≈ 500 ms, p95 ≈ 950 ms.
    for (let ms = 1; ms <= 1000; ms++) m.record('a', { status: 200, bytesOut: 0, durationMs: ms, at: DAY1 })
    const [day] = m.snapshot('a')
    expect(day!.requests).toBe(1000)
    expect(day!.p50Ms / 500).toBeGreaterThan(1 / 1.19)
    expect(day!.p50Ms / 500).toBeLessThan(1.19)
    expect(day!.p95Ms / 950).toBeGreaterThan(1 / 1.19)
    expect(day!.p95Ms / 950).toBeLessThan(1.19)
  })
})

describe('latency histograms', () => {
  it('puts very fast and very slow requests in the end buckets', () => {
    const m = new EdgeMetrics()
    m.record('a', { status: 200, bytesOut: 0, durationMs: 0, at: DAY1 })
    m.record('a', { status: 200, bytesOut: 0, durationMs: 10 * 60_000, at: DAY1 })
    const { latency } = m.snapshot('a')[0]!
    expect(latency[0]).toBe(1)
    expect(latency[LATENCY_BUCKETS_MS.length - 1]).toBe(1)
    expect(latency.reduce((a, b) => a + b)).toBe(2)
  })

  it('merges bucket by bucket and reads percentiles from the merged histogram', () => {
    const a = new Array(LATENCY_BUCKETS_MS.length).fill(0)
    const b = new Array(LATENCY_BUCKETS_MS.length).fill(0)
    a[10] = 3
    b[10] = 1
    b[20] = 4
    const merged = mergeLatency(a, b)
    expect(merged[10]).toBe(4)
    expect(merged[20]).toBe(4)
    expect(latencyPercentile(merged, 0.25)).toBeLessThanOrEqual(LATENCY_BUCKETS_MS[10]!)
    expect(latencyPercentile(merged, 0.95)).toBeGreaterThan(LATENCY_BUCKETS_MS[19]!)
    expect(latencyPercentile(merged, 0.95)).toBeLessThanOrEqual(LATENCY_BUCKETS_MS[20]!)
    expect(latencyPercentile([], 0.5)).toBe(0)
  })

  it('keeps totals since start for Prometheus that a drain does not clear: classes, bytes, a duration histogram, requests in flight', () => {
    const m = new EdgeMetrics()
    m.begin('a', 100)
    m.begin('a', 0)
    m.begin('a', 0)
    m.begin('b', 0)
    expect(m.inFlight()).toBe(4)
    m.record('a', { status: 200, bytesOut: 1000, durationMs: 3, at: DAY1 })
    m.record('a', { status: 101, bytesOut: 0, durationMs: 20_000, at: DAY1 })
    m.record('a', { status: 499, bytesOut: 0, durationMs: 7, at: DAY2 })
    m.drain()
    expect(m.inFlight()).toBe(1)
    const a = [...m.allTotals()].find((t) => t.siteId === 'a')!
    expect(a.byClass).toEqual([1, 1, 0, 1, 0])
    expect([a.bytesIn, a.bytesOut]).toEqual([100, 1000])
    // 3 ms in the first bucket (5 ms), 7 ms in the second (10 ms), 20 s above the last (10 s).
    expect(a.duration[0]).toBe(1)
    expect(a.duration[1]).toBe(1)
    expect(a.duration[DURATION_BUCKETS_S.length]).toBe(1)
    expect(a.durationSumS).toBeCloseTo(20.01, 6)
    m.record('b', { status: 200, bytesOut: 0, durationMs: 1, at: DAY2 })
    m.record('b', { status: 200, bytesOut: 0, durationMs: 1, at: DAY2 })
    expect(m.inFlight()).toBe(0)
  })
})
