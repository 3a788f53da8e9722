import { LATENCY_BUCKETS_MS, latencyPercentile, mergeLatency, type EdgeMetrics } from '../../edge/metrics'
import { SiteNotRunnableError, type ContainerRuntime, type SiteStats } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { MetricsDay, SiteMetrics } from './views'
import { parseLatency, type MetricsRepository } from './repository'
import { TtlCache } from './ttl-cache'
import type { SiteDiskCache } from '../sites'

const DAY_MS = 86_400_000
/** Stored days older than this are deleted; the API reports 90 at most. */
const KEEP_DAYS = 100
/** A walk reads every inode of the home: at most once a minute per site. */
const DISK_TTL_MS = 60_000
/**
 * The engine samples a container's stats for about a second (one-shot too; measured 0.8-2 s on
 * Docker 27), so a value is reused for a few seconds, and an answer does not wait longer than
 * STATS_WAIT_MS for it (null then; the sampling goes on and the next read gets it).
 */
const STATS_TTL_MS = 10_000
const STATS_WAIT_MS = 3_000

type Counts = Omit<MetricsDay, 'date' | 'p50_ms' | 'p95_ms'> & { latency: number[] }

/**
 * What a site's home takes on disk, in bytes allocated (like `du -s`), given its host path
 * (drivers/files/disk-usage.ts walks it without following a symlink, within a time bound).
 */
export type MeasureDisk = (home: string) => Promise<{ bytes: number }>

/**
 * Site traffic as the edge counted it (per UTC day) plus the container's current resource use.
 * The edge counts in memory; `persist` (the maintenance tick, every 30 s, and on stop) adds what
 * it gathered to the store, and reads add what is not stored yet, so a request shows at once.
 */
export class SiteMetricsService {
  private prunedFor = ''
  private disk: TtlCache<number>
  private stats: TtlCache<SiteStats | null>

  constructor(
    private clock: Clock,
    private repo: MetricsRepository,
    private edge: EdgeMetrics,
    private runtime: ContainerRuntime,
    private log: Logger,
    private measureDisk: MeasureDisk,
    /** The sites' disks (issue 38): their figures replace the walk when the site has one. */
    private disks?: Pick<SiteDiskCache, 'get'>,
  ) {
    this.disk = new TtlCache(clock, DISK_TTL_MS)
    this.stats = new TtlCache(clock, STATS_TTL_MS)
  }

  /** Moves the edge's counts into the store; once a day, drops days older than KEEP_DAYS. */
  persist(): void {
    this.repo.add(this.edge.drain())
    const today = dayOf(this.clock.now())
    if (today !== this.prunedFor) {
      this.repo.pruneBefore(dayOf(this.clock.now() - KEEP_DAYS * DAY_MS))
      this.prunedFor = today
    }
  }

  async get(site: SiteRow, days = 7): Promise<SiteMetrics> {
    const now = this.clock.now()
    const dates = Array.from({ length: days }, (_, i) => dayOf(now - (days - 1 - i) * DAY_MS))
    const from = dates[0]!
    const to = dates.at(-1)!
    // Stored rows and the not-yet-drained counts are read together, with no await between them,
    // so a drain cannot move counts from one to the other in the middle (and count them twice).
    const byDay = new Map<string, Counts>()
    const add = (day: string, c: Omit<Counts, 'latency'>, latency: number[]) => {
      if (day < from || day > to) return
      const sum = byDay.get(day) ?? zero()
      for (const k of COUNT_KEYS) sum[k] += c[k]
      sum.latency = mergeLatency(sum.latency, latency)
      byDay.set(day, sum)
    }
    for (const row of this.repo.range(site.id, from, to)) {
      add(row.day, { requests: row.requests, bytes_out: row.bytesOut, status_2xx: row.status2xx, status_3xx: row.status3xx, status_4xx: row.status4xx, status_5xx: row.status5xx }, parseLatency(row.latency))
    }
    for (const d of this.edge.snapshot(site.id)) {
      add(d.day, { requests: d.requests, bytes_out: d.bytesOut, status_2xx: d.status2xx, status_3xx: d.status3xx, status_4xx: d.status4xx, status_5xx: d.status5xx }, d.latency)
    }
    const series = dates.map((date) => ({ date, ...withPercentiles(byDay.get(date) ?? zero()) }))
    const total = zero()
    for (const c of byDay.values()) {
      for (const k of COUNT_KEYS) total[k] += c[k]
      total.latency = mergeLatency(total.latency, c.latency)
    }
    return { from, to, days: series, totals: withPercentiles(total), current: await this.current(site.slug) }
  }

  /**
   * The container's resource use now. Each part degrades to null on its own: a stopped container
   * has no CPU or memory but its files still take space; an engine that does not answer leaves
   * the traffic counts (from the store) readable.
   */
  private async current(slug: string): Promise<SiteMetrics['current']> {
    const [stats, disk, fs] = await Promise.all([
      Promise.race([this.stats.get(slug, () => this.runtime.stats(slug)), Bun.sleep(STATS_WAIT_MS).then(() => null)]).catch((err) => {
        this.log.warn('could not read container stats', { site: slug, error: (err as Error).message })
        return null
      }),
      this.diskBytes(slug),
      this.disks?.get(slug) ?? null,
    ])
    return {
      cpu_percent: stats?.cpuPercent ?? null,
      memory_bytes: stats?.memoryBytes ?? null,
      memory_limit_bytes: stats?.memoryLimitBytes ?? null,
      disk_bytes: fs?.usedBytes ?? disk,
      disk_limit_bytes: fs?.limitBytes ?? null,
    }
  }

  /**
   * The home's size by a walk (like `du -s`), for a site whose disk the runtime does not report
   * (none yet: a site's own filesystem answers with its used space instead, at no walk's cost).
   */
  private async diskBytes(slug: string): Promise<number | null> {
    if (this.disks && (await this.disks.get(slug))) return null
    return this.disk.get(slug, async () => (await this.measureDisk(await this.runtime.homePath(slug))).bytes).catch((err) => {
      // No volume (yet) is an ordinary null; anything else, such as a sandbox that filters
      // openat2, is the hoster's to see.
      if (!(err instanceof SiteNotRunnableError)) this.log.warn('could not measure disk usage', { site: slug, error: (err as Error).message })
      return null
    })
  }
}

const COUNT_KEYS = ['requests', 'bytes_out', 'status_2xx', 'status_3xx', 'status_4xx', 'status_5xx'] as const

const zero = (): Counts => ({ requests: 0, bytes_out: 0, status_2xx: 0, status_3xx: 0, status_4xx: 0, status_5xx: 0, latency: new Array(LATENCY_BUCKETS_MS.length).fill(0) })

function withPercentiles({ latency, ...counts }: Counts): Omit<MetricsDay, 'date'> {
  return { ...counts, p50_ms: latencyPercentile(latency, 0.5), p95_ms: latencyPercentile(latency, 0.95) }
}

/** The UTC day of an instant, `YYYY-MM-DD`. */
export const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10)
