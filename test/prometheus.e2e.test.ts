import { spawn, spawnSync, type Subprocess } from 'bun'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * Issue 27, part 1: /metrics as a hoster's Prometheus sees it. A real Prometheus (Debian's
 * `prometheus` package, scripts/test.sh installs it) scrapes the compiled binary every second,
 * once on the API's listener with metrics.token and once on the separate metrics.listen; its
 * query API must then show the purchased site up and exactly the requests this test sent
 * through the edge. `promtool check metrics` lints what Berth serves.
 */
const TOKEN = 'e2e-metrics-token-0123456789abcdef'
const EDGE_REQUESTS = 7
let berth: Berth
let metricsPort: number
let dnsPort: number
let slug: string
let prometheus: Subprocess | undefined
let promUrl: string
let promDir: string
let promLog = ''

/** Prometheus's instant query; the result vector. */
async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`)
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } }
  expect(body.status, JSON.stringify(body)).toBe('success')
  return body.data.result
}

/** Polls a query until `done` holds for its result (Prometheus scrapes every second); returns the last result. */
async function queryUntil(expr: string, done: (r: Awaited<ReturnType<typeof query>>) => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const result = await query(expr)
    if (done(result) || Date.now() > deadline) return result
    await Bun.sleep(250)
  }
}

const scrape = (url: string, authorization?: string) => fetch(`${url}/metrics`, authorization ? { headers: { authorization } } : {})

beforeAll(async () => {
  metricsPort = await freePort()
  dnsPort = await freePort()
  berth = await startBerth({ env: { BERTH_METRICS_TOKEN: TOKEN, BERTH_METRICS_LISTEN: `127.0.0.1:${metricsPort}`, BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(berth)
  slug = uniqueSlug('metrics')
  const key = (await buyDirect(berth.url, { slug })).data.api_key as string
  expect(await waitForSite(berth.url, key, slug, 120_000)).toBe('active')

  promDir = mkdtempSync(join(tmpdir(), 'berth-prometheus-'))
  const promPort = await freePort()
  promUrl = `http://127.0.0.1:${promPort}`
  writeFileSync(join(promDir, 'prometheus.yml'), [
    'global:',
    '  scrape_interval: 1s',
    '  scrape_timeout: 1s',
    'scrape_configs:',
    '  - job_name: berth',
    '    authorization:',
    `      credentials: ${TOKEN}`,
    '    static_configs:',
    `      - targets: ['127.0.0.1:${berth.port}']`,
    '  - job_name: berth-listener',
    '    static_configs:',
    `      - targets: ['127.0.0.1:${metricsPort}']`,
    '',
  ].join('\n'))
  prometheus = spawn(['prometheus', `--config.file=${join(promDir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdout: 'pipe', stderr: 'pipe' })
  void (async () => {
    const reader = (prometheus.stderr as ReadableStream<Uint8Array>).getReader()
    for (let r = await reader.read(); !r.done; r = await reader.read()) promLog += new TextDecoder().decode(r.value)
  })()
  const deadline = Date.now() + 30_000
  while (!(await fetch(`${promUrl}/-/ready`).then((r) => r.ok, () => false))) {
    if (prometheus.exitCode !== null || Date.now() > deadline) throw new Error(`prometheus did not start:\n${promLog}`)
    await Bun.sleep(200)
  }
}, 180_000)

afterAll(async () => {
  if (prometheus && prometheus.exitCode === null) {
    prometheus.kill('SIGTERM')
    await prometheus.exited
  }
  if (promDir) rmSync(promDir, { recursive: true, force: true })
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
}, 120_000)

describe('Prometheus scraping Berth', () => {
  it('sees the purchased site up and exactly the requests sent through the edge, on both listeners', async () => {
    for (let i = 0; i < EDGE_REQUESTS; i++) expect((await viaEdge(berth.url, slug)).status).toBe(200)
    const sum = `sum by (job) (berth_http_requests_total{site="${slug}"})`
    const counted = await queryUntil(sum, (r) => r.length === 2 && r.every((s) => s.value[1] === String(EDGE_REQUESTS)))
    expect(counted.map((s) => [s.metric.job, s.value[1]]).sort(), promLog).toEqual([['berth', String(EDGE_REQUESTS)], ['berth-listener', String(EDGE_REQUESTS)]])
    const ok = await query(`berth_http_requests_total{site="${slug}",job="berth"}`)
    expect(ok.map((s) => [s.metric.code_class, s.value[1]])).toEqual([['2xx', String(EDGE_REQUESTS)]])

    const up = await queryUntil(`berth_site_up{site="${slug}"}`, (r) => r.length === 2)
    expect(up.map((s) => s.value[1])).toEqual(['1', '1'])
    expect(up[0]!.metric.node).toBeTruthy()
    expect((await query('up{job=~"berth.*"}')).map((s) => s.value[1])).toEqual(['1', '1'])
    const durations = await query(`berth_http_request_duration_seconds_count{site="${slug}",job="berth"}`)
    expect(durations.map((s) => s.value[1])).toEqual([String(EDGE_REQUESTS)])
    expect(Number((await query(`berth_http_response_size_bytes_total{site="${slug}",job="berth"}`))[0]!.value[1])).toBeGreaterThan(0)
    expect((await query('berth_sites{status="active",job="berth"}')).map((s) => s.value[1])).toEqual(['1'])
    expect(Number((await query('process_resident_memory_bytes{job="berth"}'))[0]!.value[1])).toBeGreaterThan(10_000_000)
  })

  it('counts the DNS server\'s answers by response code', async () => {
    const dig = (name: string) => spawnSync(['dig', '@127.0.0.1', '-p', String(dnsPort), '+norecurse', '+time=2', '+tries=1', name, 'A'], { stdout: 'pipe', stderr: 'pipe' }).stdout.toString()
    expect(dig(`${slug}.localhost`)).toContain('status: NOERROR')
    expect(dig(`${slug}.localhost`)).toContain('status: NOERROR')
    expect(dig('example.org')).toContain('status: REFUSED')
    const counted = await queryUntil('berth_dns_queries_total{job="berth"}', (r) => r.length === 2)
    expect(Object.fromEntries(counted.map((s) => [s.metric.rcode, s.value[1]]))).toEqual({ NOERROR: '2', REFUSED: '1' })
  })

  it('serves a document promtool check metrics passes, with no path or client address in a label', async () => {
    const res = await scrape(berth.url, `Bearer ${TOKEN}`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const text = await res.text()
    expect(text).toContain(`berth_site_up{site="${slug}",node=`)
    const check = spawnSync(['promtool', 'check', 'metrics'], { stdin: Buffer.from(text) })
    expect(check.exitCode, `${check.stdout.toString()}${check.stderr.toString()}`).toBe(0)
    expect(text).not.toMatch(/127\.0\.0\.1|path="/)
  })

  it('refuses /metrics on the API listener without the token (401, WWW-Authenticate) or with a wrong one; the separate listener asks none and serves nothing else', async () => {
    for (const authorization of [undefined, `Bearer ${TOKEN}x`, 'Bearer wrong-token-wrong-token']) {
      const res = await scrape(berth.url, authorization)
      expect(res.status, authorization).toBe(401)
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer /)
      expect(await res.text()).not.toContain('berth_')
    }
    const open = await scrape(`http://127.0.0.1:${metricsPort}`)
    expect(open.status).toBe(200)
    expect(await open.text()).toContain('berth_http_requests_total')
    expect((await fetch(`http://127.0.0.1:${metricsPort}/api/v1/status/`)).status).toBe(404)
  })
})
