import { and, eq, gte, lt, lte } from 'drizzle-orm'
import { mergeLatency, type SiteDayMetrics } from '../../edge/metrics'
import { siteMetricsDaily, type SiteMetricsDayRow } from '../../store/schema'
import type { Store } from '../../store/store'

/** The edge's per-site, per-UTC-day counts, added up across drains (site_metrics_daily). */
export class MetricsRepository {
  constructor(private store: Store) {}

  /** Adds drained counts to the stored days, in one transaction. */
  add(drained: SiteDayMetrics[]): void {
    if (drained.length === 0) return
    this.store.write(() => {
      for (const d of drained) {
        const key = and(eq(siteMetricsDaily.siteId, d.siteId), eq(siteMetricsDaily.day, d.day))
        const stored = this.store.db.select().from(siteMetricsDaily).where(key).get()
        if (!stored) {
          this.store.db.insert(siteMetricsDaily).values({ ...counts(d), siteId: d.siteId, day: d.day, latency: JSON.stringify(d.latency) }).run()
          continue
        }
        this.store.db.update(siteMetricsDaily).set({
          requests: stored.requests + d.requests,
          bytesOut: stored.bytesOut + d.bytesOut,
          status2xx: stored.status2xx + d.status2xx,
          status3xx: stored.status3xx + d.status3xx,
          status4xx: stored.status4xx + d.status4xx,
          status5xx: stored.status5xx + d.status5xx,
          latency: JSON.stringify(mergeLatency(parseLatency(stored.latency), d.latency)),
        }).where(key).run()
      }
    })
  }

  /** The site's stored days from `from` to `to` (`YYYY-MM-DD`, inclusive). */
  range(siteId: string, from: string, to: string): SiteMetricsDayRow[] {
    return this.store.db.select().from(siteMetricsDaily)
      .where(and(eq(siteMetricsDaily.siteId, siteId), gte(siteMetricsDaily.day, from), lte(siteMetricsDaily.day, to))).all()
  }

  /** Deletes every day before `day`. */
  pruneBefore(day: string): void {
    this.store.write(() => {
      this.store.db.delete(siteMetricsDaily).where(lt(siteMetricsDaily.day, day)).run()
    })
  }
}

const counts = (d: SiteDayMetrics) => ({
  requests: d.requests, bytesOut: d.bytesOut, status2xx: d.status2xx, status3xx: d.status3xx, status4xx: d.status4xx, status5xx: d.status5xx,
})

/** A stored histogram; an unreadable one counts as empty rather than failing the whole answer. */
export function parseLatency(text: string): number[] {
  try {
    const value = JSON.parse(text) as unknown
    return Array.isArray(value) ? value.map((n) => (typeof n === 'number' && n >= 0 ? n : 0)) : []
  } catch {
    return []
  }
}
