import { CODE_CLASSES, DURATION_BUCKETS_S, type EdgeMetrics } from '../../edge/metrics'
import type { DnsQueryCounts } from '../../dns/query-counts'
import type { ProcessStats } from '../../drivers/process/types'
import { renderExposition, type MetricFamily, type Sample } from './exposition'
import type { PrometheusRepository } from './repository'
import { GIB, type RoomFigures } from '../room'

/** Everything /metrics reads; src/compose builds it. */
export interface ScrapeSources {
  edge: Pick<EdgeMetrics, 'allTotals' | 'inFlight'>
  repo: Pick<PrometheusRepository, 'read'>
  /** Where a running site's container answers; null when it is not running (SiteRunner.endpointOf). */
  endpointOf(slug: string): Promise<unknown>
  /** Certificate orders (first issue or renewal) that failed since start. */
  tlsOrderFailures(): number
  /** The DNS server's answers by code; null when dns.listen is off. */
  dns: Pick<DnsQueryCounts, 'byRcode'> | null
  /** Seconds since the newest store copy left the box; absent when offsite is off, null before the first. */
  offsiteStoreCopyAgeSeconds?: () => number | null
  process: () => ProcessStats
  /** This box's name, the `node` label of `berth_site_up`. */
  node: string
  /** The data folder's disk against the reserve Berth keeps (domain/room); absent: not exported. */
  room?: () => RoomFigures
  /** The sites' databases (issue 40): up as the store keeps it, and each one's size; absent: not exported. */
  databases?: () => Promise<Array<{ site: string; database: string; engine: string; up: boolean; sizeBytes: number | null }>>
}

/**
 * The metrics Berth exports to Prometheus (docs/operations.md, "Watching Berth with Prometheus",
 * lists them), named as Caddy, Traefik and the client libraries name theirs so that existing
 * dashboards fit. Label values are bounded: site slugs, status names, certificate names, DNS
 * response codes; never a path or a client's address.
 *
 * Counters kept in memory (the edge's, the DNS server's, the certificate failures) start at zero
 * with the process, which Prometheus's `rate()` and `increase()` take as a counter reset. The
 * rest is read from the store at scrape time in a few aggregate queries.
 */
export async function scrapeMetrics(s: ScrapeSources): Promise<string> {
  const store = s.repo.read()
  const slugOf = new Map(store.sites.map((site) => [site.id, site.slug]))
  const up = await Promise.all(store.sites.map(async (site) => ({ site: site.slug, up: site.status === 'active' && (await s.endpointOf(site.slug)) ? 1 : 0 })))
  const databases = (await s.databases?.()) ?? []
  return renderExposition([
    ...edgeFamilies(s.edge, slugOf),
    gauge('berth_site_up', 'Whether a site serves: 1 when it is active and its container is running, 0 otherwise.', up.map((u) => ({ labels: { site: u.site, node: s.node }, value: u.up }))),
    gauge('berth_database_up', "Whether a site's database answers: 1 when it is available, 0 when it is stopped (site suspended or pending deletion), recovering, creating or failed.", databases.map((d) => ({ labels: { site: d.site, database: d.database, engine: d.engine }, value: d.up ? 1 : 0 }))),
    gauge('berth_database_size_bytes', "Bytes of a database's data on its own disk; left out while it is not available.", databases.filter((d) => d.sizeBytes !== null).map((d) => ({ labels: { site: d.site, database: d.database, engine: d.engine }, value: d.sizeBytes! }))),
    gauge('berth_sites', 'Sites by status (deleted ones left out).', countBy(store.sites.map((site) => site.status)).map(([status, n]) => ({ labels: { status }, value: n }))),
    gauge('berth_jobs', 'Background jobs waiting or running, by state.', ['queued', 'running'].map((state) => ({ labels: { state }, value: store.jobs.find((j) => j.status === state)?.n ?? 0 }))),
    counter('berth_jobs_failed_total', 'Background jobs that failed for good (after their retries).', [{ value: store.jobs.find((j) => j.status === 'failed')?.n ?? 0 }]),
    gauge('berth_tls_cert_not_after_seconds', 'When each certificate Berth serves expires, seconds since the epoch; name is its first name.', certificateExpiries(store.certificates)),
    counter('berth_tls_renewal_failures_total', 'Certificate orders (first issue or renewal) that failed since Berth started.', [{ value: s.tlsOrderFailures() }]),
    gauge('berth_subscriptions', 'Subscriptions by status.', store.subscriptions.map((x) => ({ labels: { status: x.status }, value: x.n }))),
    counter('berth_renewal_charges_failed_total', 'Renewal charges the payment processor declined.', [{ value: store.renewalChargesFailed }]),
    counter('berth_dns_queries_total', 'Queries Berth\'s DNS server answered, by response code.', (s.dns?.byRcode() ?? []).map((r) => ({ labels: { rcode: r.rcode }, value: r.count }))),
    ...offsiteFamilies(s),
    ...diskFamilies(s),
    ...processFamilies(s.process()),
  ])
}

/** The edge's traffic per site since start, as Caddy's `caddy_http_*` and Traefik's families. */
function edgeFamilies(edge: ScrapeSources['edge'], slugOf: Map<string, string>): MetricFamily[] {
  const requests: Sample[] = []
  const bytesIn: Sample[] = []
  const bytesOut: Sample[] = []
  const durations: Extract<MetricFamily, { type: 'histogram' }>['samples'][number][] = []
  for (const t of edge.allTotals()) {
    // A deleted site's counts stop being exported with it.
    const site = slugOf.get(t.siteId)
    if (site === undefined) continue
    CODE_CLASSES.forEach((code_class, i) => {
      if (t.byClass[i]) requests.push({ labels: { site, code_class }, value: t.byClass[i]! })
    })
    bytesIn.push({ labels: { site }, value: t.bytesIn })
    bytesOut.push({ labels: { site }, value: t.bytesOut })
    durations.push({ labels: { site }, bounds: DURATION_BUCKETS_S, counts: t.duration, sum: round(t.durationSumS) })
  }
  return [
    counter('berth_http_requests_total', 'Requests the edge answered for a site, by status class (the edge\'s own error pages included).', requests),
    { name: 'berth_http_request_duration_seconds', help: 'Time from a request\'s arrival at the edge to the end of its response body.', type: 'histogram', samples: durations },
    counter('berth_http_request_size_bytes_total', 'Request body bytes sent to a site, as declared by Content-Length.', bytesIn),
    counter('berth_http_response_size_bytes_total', 'Response body bytes the edge sent for a site.', bytesOut),
    gauge('berth_http_requests_in_flight', 'Requests to sites the edge is answering now (their body still streaming included).', [{ value: edge.inFlight() }]),
  ]
}

function offsiteFamilies(s: ScrapeSources): MetricFamily[] {
  if (!s.offsiteStoreCopyAgeSeconds) return []
  const age = s.offsiteStoreCopyAgeSeconds()
  return [gauge('berth_offsite_last_store_copy_age_seconds', 'Seconds since the newest copy of the store left the box (none before the first).', age === null ? [] : [{ value: age }])]
}

/** The data folder's filesystem, the reserve Berth keeps on it, and the disk the sites' plans promise (overcommit made visible). */
function diskFamilies(s: ScrapeSources): MetricFamily[] {
  if (!s.room) return []
  const r = s.room()
  return [
    gauge('berth_disk_free_bytes', "Free bytes on the filesystem of Berth's data folder (store, archives, certificates).", [{ value: r.freeBytes }]),
    gauge('berth_disk_total_bytes', "Size of the filesystem of Berth's data folder.", [{ value: r.totalBytes }]),
    gauge('berth_disk_reserve_bytes', 'The free space Berth keeps for itself (disk.reserve_bytes, disk.reserve_percent); under it new sites, snapshots and backups are refused.', [{ value: r.thresholdBytes }]),
    gauge('berth_disk_low', '1 while free space is under the reserve (new sites, snapshots and backups refused), 0 otherwise.', [{ value: r.low ? 1 : 0 }]),
    gauge('berth_sites_disk_quota_bytes', "The sum of the plans' disk_gb of the sites that exist, in bytes: against berth_disk_total_bytes, the overcommit.", [{ value: r.sitesDiskGb * GIB }]),
  ]
}

/** The process's own, named as every Prometheus client library names them. */
function processFamilies(p: ProcessStats): MetricFamily[] {
  return [
    counter('process_cpu_seconds_total', 'Total user and system CPU time spent in seconds.', [{ value: round(p.cpuSeconds) }]),
    gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', [{ value: p.residentMemoryBytes }]),
    gauge('process_open_fds', 'Number of open file descriptors.', p.openFds === null ? [] : [{ value: p.openFds }]),
    gauge('process_start_time_seconds', 'Start time of the process since unix epoch in seconds.', [{ value: p.startTimeSeconds }]),
  ]
}

const counter = (name: string, help: string, samples: Sample[]): MetricFamily => ({ name, help, type: 'counter', samples })
const gauge = (name: string, help: string, samples: Sample[]): MetricFamily => ({ name, help, type: 'gauge', samples })

function countBy(values: string[]): [string, number][] {
  const counts = new Map<string, number>()
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1)
  return [...counts].sort(([a], [b]) => a.localeCompare(b))
}

/** Each certificate name once, with the latest expiry of the certificates it is first in. */
function certificateExpiries(certs: { subject: string; names: string; notAfter: number }[]): Sample[] {
  const latest = new Map<string, number>()
  for (const c of certs) {
    const name = firstName(c.names, c.subject)
    latest.set(name, Math.max(latest.get(name) ?? 0, Math.floor(c.notAfter / 1000)))
  }
  return [...latest].sort(([a], [b]) => a.localeCompare(b)).map(([name, value]) => ({ labels: { name }, value }))
}

/** A certificate's first name (its common name), or its subject when the names cannot be read. */
function firstName(names: string, subject: string): string {
  try {
    const list = JSON.parse(names) as unknown
    return Array.isArray(list) && typeof list[0] === 'string' ? list[0] : subject
  } catch {
    return subject
  }
}

const round = (n: number) => Math.round(n * 1e6) / 1e6
