import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { EdgeMetrics } from '../../edge/metrics'
import { DnsQueryCounts } from '../../dns/query-counts'
import { scrapeMetrics, type ScrapeSources } from './scrape'
import type { StoreGauges } from './repository'

const DOCS = join(import.meta.dirname, '..', '..', '..', 'docs')
const AT = Date.UTC(2026, 10, 26)

/** Sources as a box with two live sites (one serving) and one deleted site's traffic still counted. */
function sources(over: Partial<ScrapeSources> = {}): ScrapeSources {
  const edge = new EdgeMetrics()
  for (const [site, status] of [['s1', 200], ['s1', 200], ['s1', 503], ['s2', 404], ['gone', 200]] as const) {
    edge.begin(site, 10)
    edge.record(site, { status, bytesOut: 100, durationMs: 2, at: AT })
  }
  const dns = new DnsQueryCounts()
  dns.answered(Uint8Array.from([0, 0, 0x84, 0x03]))
  const store: StoreGauges = {
    sites: [{ id: 's1', slug: 'shop', status: 'active' }, { id: 's2', slug: 'blog', status: 'suspended' }],
    jobs: [{ status: 'queued', n: 2 }, { status: 'failed', n: 1 }],
    certificates: [
      { subject: 'site:s1', names: '["shop.sites.test"]', notAfter: AT + 1000 },
      { subject: 'api', names: '["berth.test"]', notAfter: AT + 5000 },
      { subject: 'domain:d1', names: '["berth.test","www.berth.test"]', notAfter: AT + 9000 },
    ],
    subscriptions: [{ status: 'active', n: 3 }],
    renewalChargesFailed: 2,
  }
  return {
    edge,
    repo: { read: () => store },
    endpointOf: async (slug) => (slug === 'shop' ? { address: '172.18.0.2', port: 8080 } : null),
    tlsOrderFailures: () => 4,
    dns,
    process: () => ({ cpuSeconds: 1.25, residentMemoryBytes: 5e7, openFds: 20, startTimeSeconds: 1_790_000_000 }),
    node: 'box1',
    ...over,
  }
}

const familiesOf = (text: string) => [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => m[1]!)

describe('scrapeMetrics', () => {
  it('exports the edge per site slug (a deleted site\'s counts left out), sites up, and the store\'s aggregates', async () => {
    const text = await scrapeMetrics(sources())
    const lines = text.split('\n').filter((l) => l && !l.startsWith('#'))
    expect(lines.filter((l) => l.startsWith('berth_http_requests_total'))).toEqual([
      'berth_http_requests_total{site="shop",code_class="2xx"} 2',
      'berth_http_requests_total{site="shop",code_class="5xx"} 1',
      'berth_http_requests_total{site="blog",code_class="4xx"} 1',
    ])
    expect(text).toContain('berth_http_request_duration_seconds_count{site="shop"} 3\n')
    expect(text).toContain('berth_http_request_size_bytes_total{site="shop"} 30\n')
    expect(text).toContain('berth_http_requests_in_flight 0\n')
    expect(text).not.toContain('gone')
    expect(lines.filter((l) => l.startsWith('berth_site_up'))).toEqual(['berth_site_up{site="shop",node="box1"} 1', 'berth_site_up{site="blog",node="box1"} 0'])
    expect(text).toContain('berth_sites{status="active"} 1\nberth_sites{status="suspended"} 1\n')
    expect(text).toContain('berth_jobs{state="queued"} 2\nberth_jobs{state="running"} 0\n')
    expect(text).toContain('berth_jobs_failed_total 1\n')
    // One series per name: the latest expiry of the certificates it is first in.
    expect(lines.filter((l) => l.startsWith('berth_tls_cert_not_after_seconds'))).toEqual([
      `berth_tls_cert_not_after_seconds{name="berth.test"} ${(AT + 9000) / 1000}`,
      `berth_tls_cert_not_after_seconds{name="shop.sites.test"} ${(AT + 1000) / 1000}`,
    ])
    expect(text).toContain('berth_tls_renewal_failures_total 4\n')
    expect(text).toContain('berth_renewal_charges_failed_total 2\n')
    expect(text).toContain('berth_dns_queries_total{rcode="NXDOMAIN"} 1\n')
    expect(text).toContain('process_open_fds 20\n')
    expect(text).not.toContain('berth_offsite_last_store_copy_age_seconds')
  })

  it('exports the store copy\'s age only with offsite configured, without a sample before the first copy', async () => {
    expect(await scrapeMetrics(sources({ offsiteStoreCopyAgeSeconds: () => 42 }))).toContain('berth_offsite_last_store_copy_age_seconds 42\n')
    const none = await scrapeMetrics(sources({ offsiteStoreCopyAgeSeconds: () => null }))
    expect(none).toContain('# TYPE berth_offsite_last_store_copy_age_seconds gauge\n')
    expect(none).not.toMatch(/^berth_offsite_last_store_copy_age_seconds /m)
  })

  it('exports each database\'s up (from its state) and its size, the size only while it is available', async () => {
    const text = await scrapeMetrics(sources({
      databases: async () => [
        { site: 'shop', database: 'main', engine: 'postgres', up: true, sizeBytes: 7_811_072 },
        { site: 'blog', database: 'cache', engine: 'redis', up: false, sizeBytes: null },
      ],
    }))
    expect(text).toContain('berth_database_up{site="shop",database="main",engine="postgres"} 1\n')
    expect(text).toContain('berth_database_up{site="blog",database="cache",engine="redis"} 0\n')
    expect(text).toContain('berth_database_size_bytes{site="shop",database="main",engine="postgres"} 7811072\n')
    expect(text).not.toMatch(/^berth_database_size_bytes\{site="blog"/m)
  })

  it('has every metric listed in operations.md, and the Grafana dashboard uses no other name', async () => {
    const names = familiesOf(await scrapeMetrics(sources({ offsiteStoreCopyAgeSeconds: () => 1, room: () => ({ freeBytes: 9, totalBytes: 20, thresholdBytes: 2, low: false, sitesDiskGb: 5 }) })))
    const table = readFileSync(join(DOCS, 'operations.md'), 'utf8').split('## Watching Berth with Prometheus')[1]!.split('\n## ')[0]!
    const documented = [...table.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]!)
    expect(documented).toEqual(names)
    const dashboard = readFileSync(join(DOCS, 'grafana-berth.json'), 'utf8')
    const used = new Set([...dashboard.matchAll(/\b((?:berth|process)_[a-z_]+?)(?:_bucket|_sum|_count)?\b(?=[{\[ )])/g)].map((m) => m[1]!))
    expect([...used].filter((n) => !names.includes(n))).toEqual([])
    expect(used.size).toBeGreaterThanOrEqual(names.length - 1)
  })
})
