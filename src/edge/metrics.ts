import type { EdgeMetricsSink, EdgeRequestRecord } from './types'

/**
 * Upper bounds (ms) of the latency buckets: 0.25 ms to about 4.5 min, four buckets per
 * doubling, so any percentile read from them is within 19 % of the true value. The last
 * bucket also takes everything slower.
 */
export const LATENCY_BUCKETS_MS: readonly number[] = Array.from({ length: 81 }, (_, i) => 0.25 * 2 ** (i / 4))

/** One site's traffic on one UTC day, as the edge counted it. */
export interface SiteDayMetrics {
  siteId: string
  /** UTC date, `YYYY-MM-DD`. */
  day: string
  requests: number
  bytesOut: number
  status2xx: number
  status3xx: number
  status4xx: number
  status5xx: number
  /** Request counts per LATENCY_BUCKETS_MS bucket; add two to merge them. */
  latency: number[]
  p50Ms: number
  p95Ms: number
}

type Counts = Omit<SiteDayMetrics, 'p50Ms' | 'p95Ms'>

/**
 * Upper bounds (s) of the request-duration histogram exported to Prometheus: the client
 * libraries' default buckets, which Caddy's and Traefik's duration histograms use too, so that
 * their dashboards' quantiles read the same.
 */
export const DURATION_BUCKETS_S: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const DURATION_BUCKETS_MS = DURATION_BUCKETS_S.map((s) => s * 1000)

/** The status classes counted apart, `1xx` (a WebSocket's 101) to `5xx`. */
export const CODE_CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const

/**
 * One site's traffic since Berth started, never drained: what Prometheus scrapes (its counters
 * only ever grow; a restart starts them at zero, which `rate()` understands).
 */
export interface SiteTotals {
  siteId: string
  /** Requests per CODE_CLASSES entry. */
  byClass: number[]
  /** Request body bytes as declared by Content-Length (a chunked body counts 0). */
  bytesIn: number
  bytesOut: number
  /** Requests per DURATION_BUCKETS_S bound, one more for slower; not cumulative. */
  duration: number[]
  durationSumS: number
}

const DAY_MS = 86_400_000

/**
 * Per-site, per-day request metrics gathered in memory by the edge proxy. `drain` hands over
 * what was gathered since the last drain (to be added to the stored totals) and starts afresh.
 *
 * @example
 * const metrics = new EdgeMetrics()
 * metrics.record('site_1', { status: 200, bytesOut: 2048, durationMs: 3.1, at: Date.now() })
 * metrics.snapshot('site_1')[0].requests // 1
 */
export class EdgeMetrics implements EdgeMetricsSink {
  private days = new Map<string, Map<string, Counts>>()
  // The last day key, so that the hot path does not format a date per request.
  private dayStart = 0
  private dayKey = ''
  private totals = new Map<string, SiteTotals>()
  private begun = 0
  private ended = 0

  begin(siteId: string, bytesIn: number): void {
    this.begun++
    if (bytesIn > 0) this.totalsOf(siteId).bytesIn += bytesIn
  }

  record(siteId: string, request: EdgeRequestRecord): void {
    this.ended++
    const t = this.totalsOf(siteId)
    const cls = Math.floor(request.status / 100)
    if (cls >= 1 && cls <= 5) t.byClass[cls - 1]!++
    t.bytesOut += request.bytesOut
    t.duration[durationBucketOf(request.durationMs)]!++
    t.durationSumS += request.durationMs / 1000
    this.recordDay(siteId, request, cls)
  }

  /** Every site's totals since start (live objects: read them during the call, change nothing). */
  allTotals(): IterableIterator<SiteTotals> {
    return this.totals.values()
  }

  /** Requests begun and not yet answered in full (their body still streaming included). */
  inFlight(): number {
    return Math.max(0, this.begun - this.ended)
  }

  private totalsOf(siteId: string): SiteTotals {
    let t = this.totals.get(siteId)
    if (!t) this.totals.set(siteId, (t = { siteId, byClass: [0, 0, 0, 0, 0], bytesIn: 0, bytesOut: 0, duration: new Array(DURATION_BUCKETS_S.length + 1).fill(0), durationSumS: 0 }))
    return t
  }

  private recordDay(siteId: string, request: EdgeRequestRecord, cls: number): void {
    const day = this.dayOf(request.at)
    let site = this.days.get(day)
    if (!site) this.days.set(day, (site = new Map()))
    let c = site.get(siteId)
    if (!c) site.set(siteId, (c = emptyCounts(siteId, day)))
    c.requests++
    c.bytesOut += request.bytesOut
    if (cls === 2) c.status2xx++
    else if (cls === 3) c.status3xx++
    else if (cls === 4) c.status4xx++
    else if (cls === 5) c.status5xx++
    c.latency[bucketOf(request.durationMs)]!++
  }

  /** Everything gathered since the last drain, oldest day first; the store adds it to its totals. */
  drain(): SiteDayMetrics[] {
    const out: SiteDayMetrics[] = []
    for (const day of [...this.days.keys()].sort()) {
      for (const counts of this.days.get(day)!.values()) out.push(withPercentiles(counts))
    }
    this.days.clear()
    return out
  }

  /** What was gathered for one site since the last drain, oldest day first; nothing is cleared. */
  snapshot(siteId: string): SiteDayMetrics[] {
    const out: SiteDayMetrics[] = []
    for (const day of [...this.days.keys()].sort()) {
      const counts = this.days.get(day)!.get(siteId)
      if (counts) out.push(withPercentiles({ ...counts, latency: [...counts.latency] }))
    }
    return out
  }

  private dayOf(at: number): string {
    if (at < this.dayStart || at >= this.dayStart + DAY_MS) {
      this.dayStart = at - (at % DAY_MS)
      this.dayKey = new Date(this.dayStart).toISOString().slice(0, 10)
    }
    return this.dayKey
  }
}

/** Adds two latency histograms bucket by bucket (e.g. a drained day into the stored one). */
export function mergeLatency(a: readonly number[], b: readonly number[]): number[] {
  return LATENCY_BUCKETS_MS.map((_, i) => (a[i] ?? 0) + (b[i] ?? 0))
}

/**
 * The q-quantile (0 < q ≤ 1) of a latency histogram in ms, interpolated inside its bucket on a
 * log scale; 0 for an empty histogram.
 */
export function latencyPercentile(latency: readonly number[], q: number): number {
  let total = 0
  for (const n of latency) total += n
  if (total === 0) return 0
  const rank = q * total
  let seen = 0
  for (let i = 0; i < LATENCY_BUCKETS_MS.length; i++) {
    const n = latency[i] ?? 0
    if (n > 0 && seen + n >= rank) {
      const upper = LATENCY_BUCKETS_MS[i]!
      const lower = i === 0 ? upper / 2 ** 0.25 : LATENCY_BUCKETS_MS[i - 1]!
      return round(lower * (upper / lower) ** ((rank - seen) / n))
    }
    seen += n
  }
  return LATENCY_BUCKETS_MS[LATENCY_BUCKETS_MS.length - 1]!
}

function durationBucketOf(ms: number): number {
  let i = 0
  while (i < DURATION_BUCKETS_MS.length && ms > DURATION_BUCKETS_MS[i]!) i++
  return i
}

function bucketOf(ms: number): number {
  if (!(ms > 0.25)) return 0
  const i = Math.ceil(4 * Math.log2(ms / 0.25))
  return i < LATENCY_BUCKETS_MS.length ? i : LATENCY_BUCKETS_MS.length - 1
}

function emptyCounts(siteId: string, day: string): Counts {
  return { siteId, day, requests: 0, bytesOut: 0, status2xx: 0, status3xx: 0, status4xx: 0, status5xx: 0, latency: new Array(LATENCY_BUCKETS_MS.length).fill(0) }
}

function withPercentiles(c: Counts): SiteDayMetrics {
  return { ...c, p50Ms: latencyPercentile(c.latency, 0.5), p95Ms: latencyPercentile(c.latency, 0.95) }
}

const round = (ms: number) => Math.round(ms * 100) / 100
