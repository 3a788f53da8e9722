/**
 * `bun run bench:seo`: a site's HTML page through Berth's edge with the seo module on against the
 * same page with it off, same run, same load tool (issue 14). With seo on, every page is held,
 * its head read and the missing tags added; the goal is at least 0.85 of the requests per second
 * with it off. Also with the chatbot on as well (the widget's script tag added), reported. And
 * the SEO report (GET /sites/{slug}/modules/seo/report/) of a site of REPORT_PAGES pages, timed
 * (every page listed and read through the modules' site reader, issue 23).
 *
 * `dist/berth serve` (a copy, so a rebuild meanwhile changes nothing) on a fresh data folder; one
 * Business VPS site (nginx + PHP-FPM, kept-alive connections) bought through a checkout; a 3 KB
 * page written through the files API; wrk -t2 -c64, 3 s warm-up + 10 s, 3 interleaved rounds
 * (off, on, on + chatbot); the figure is the median of the per-round ratios. The report: 20
 * requests a round after 3 untimed, the median.
 *
 * `--baseline <binary>`: a second Berth from another build (e.g. /work/main/dist/berth, or a
 * build of an earlier commit) with its own site, measured in the same rounds, interleaved mode
 * by mode (taking turns going first); each figure of this build is then also given as a ratio to
 * the baseline's.
 */
import { copyFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { api, BINARY, startBerth, type Berth } from '../test/helpers/binary'
import { buyDirect, waitForSite } from '../test/helpers/purchase'
import { instanceOf, removeInstanceSites } from '../test/helpers/sites'
import { cleanupOnExit, tempDir } from './processes'
import { median } from './stats'
import { measure, warmUp, WRK_SETTINGS, wrkInstalled, type WrkResult } from './wrk'

const GOAL = 0.85
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const REPORT_PAGES = 300
const REPORT_REQUESTS = 20
const baselineAt = process.argv.indexOf('--baseline')
const BASELINE = baselineAt === -1 ? null : resolve(process.argv[baselineAt + 1] ?? '')

if (!wrkInstalled()) throw new Error('wrk is not installed; install it with: apt-get install wrk')
cleanupOnExit()
const dir = tempDir('berth-bench-seo-')
const self = join(dir, 'berth')
copyFileSync(BINARY, self)

/** One build under test: its Berth, its site and key. */
interface Build {
  name: string
  berth: Berth
  slug: string
  key: string
}

const paragraphs = Array.from({ length: 30 }, (_, i) => `<p>Paragraph ${i} of the bakery's story: sourdough, croissants and the harbour at dawn.</p>`).join('\n')
const page = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Harbour Bakery</title></head>\n<body><h1>Harbour Bakery</h1>\n${paragraphs}\n</body></html>\n`

async function startBuild(name: string, binary: string, n: number): Promise<Build> {
  const berth = await startBerth({ binary, dataDir: join(dir, `data-${n}`), env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  started.push(berth)
  instanceOf(berth)
  const slug = `seobench${n}${Date.now().toString(36)}`
  const key = (await buyDirect(berth.url, { slug, sku: 'svc_business_monthly' })).data.api_key as string
  if ((await waitForSite(berth.url, key, slug, 120_000)) !== 'active') throw new Error(`the site ${slug} did not become active`)
  const write = async (path: string, content: string) => {
    const res = await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path, content } })
    if (res.status !== 200) throw new Error(`write ${path}: ${res.status} ${res.text}`)
  }
  await write('public/index.html', page)
  // The report's site: REPORT_PAGES pages in folders of 10, as the chatbot bench lays them out.
  for (let i = 1; i < REPORT_PAGES; i++) await write(i % 10 === 0 ? `public/section-${i / 10}/index.html` : `public/section-${Math.floor(i / 10)}/page-${i}.html`, page.replace('Harbour Bakery</title>', `Page ${i}</title>`))
  return { name, berth, slug, key }
}

const builds: Build[] = []
const started: Berth[] = []
try {
  builds.push(await startBuild('this build', self, 0))
  if (BASELINE !== null) builds.push(await startBuild(`baseline ${BASELINE}`, BASELINE, 1))
  const set = async (b: Build, module: string, enabled: boolean) => {
    const res = await api(b.berth.url, 'POST', `/sites/${b.slug}/modules/${module}/toggle/`, { key: b.key, body: { enabled } })
    if (res.status !== 200) throw new Error(`toggle ${module}: ${res.status} ${res.text}`)
  }
  const target = (b: Build, name: string) => ({ name, url: `${b.berth.url}/`, pid: b.berth.proc.pid, headers: { Host: `${b.slug}.localhost:${b.berth.port}` } })
  const modes: [string, (b: Build) => Promise<void>][] = [
    ['seo off', async (b) => { await set(b, 'seo', false); await set(b, 'chatbot', false) }],
    ['seo on', async (b) => { await set(b, 'seo', true); await set(b, 'chatbot', false) }],
    ['seo + chatbot on', async (b) => { await set(b, 'seo', true); await set(b, 'chatbot', true) }],
  ]
  console.log(`SEO: a ${page.length}-byte page through Berth's edge, module off vs on; wrk -t${WRK_SETTINGS.threads} -c${WRK_SETTINGS.connections}, ${WRK_SETTINGS.warmupSeconds} s warm-up + ${WRK_SETTINGS.durationSeconds} s, ${ROUNDS} rounds; the report of ${REPORT_PAGES} pages, ${REPORT_REQUESTS} requests a round`)
  const results = new Map<string, Record<string, WrkResult[]>>(builds.map((b) => [b.name, {}]))
  const reports = new Map<string, number[]>(builds.map((b) => [b.name, []]))
  for (let round = 1; round <= ROUNDS; round++) {
    // The builds take turns going first (this build first in odd rounds), so that neither gains from the order.
    const order = round % 2 === 1 ? builds : [...builds].reverse()
    for (const [name, apply] of modes) {
      for (const b of order) {
        await apply(b)
        const probe = await fetch(`${b.berth.url}/`, { headers: { host: `${b.slug}.localhost:${b.berth.port}` } }).then((r) => r.text())
        if (name !== 'seo off' && !probe.includes('og:title')) throw new Error(`${b.name} ${name}: the page has no added tags`)
        await warmUp(target(b, name))
        const r = await measure(target(b, name))
        if (r.non2xx > 0) throw new Error(`${b.name} ${name}: ${r.non2xx} answers outside 2xx`)
        ;(results.get(b.name)![name] ??= []).push(r)
        console.log(`  round ${round}/${ROUNDS} ${b.name.slice(0, 14).padEnd(14)} ${name.padEnd(18)} ${Math.round(r.requestsPerSec).toString().padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms`)
      }
    }
    for (const b of order) {
      const times: number[] = []
      for (let i = 0; i < REPORT_REQUESTS + 3; i++) {
        const started = performance.now()
        const res = await api(b.berth.url, 'GET', `/sites/${b.slug}/modules/seo/report/`, { key: b.key })
        const ms = performance.now() - started
        if (res.status !== 200 || res.json.data.pages_checked !== REPORT_PAGES) throw new Error(`${b.name} report: ${res.status} ${res.text.slice(0, 200)}`)
        if (i >= 3) times.push(ms)
      }
      reports.get(b.name)!.push(median(times))
      console.log(`  round ${round}/${ROUNDS} ${b.name.slice(0, 14).padEnd(14)} report of ${REPORT_PAGES} pages ${median(times).toFixed(1)} ms (median of ${REPORT_REQUESTS})`)
    }
  }
  const mine = results.get(builds[0]!.name)!
  const ratio = (of: Record<string, WrkResult[]>, name: string) => median(of[name]!.map((r, i) => r.requestsPerSec / of['seo off']![i]!.requestsPerSec))
  const on = ratio(mine, 'seo on')
  for (const b of builds) {
    const own = results.get(b.name)!
    console.log(`\n${b.name}\nFigure                          req/s (median)   vs off   goal`)
    for (const [name] of modes) console.log(`${name.padEnd(32)}${Math.round(median(own[name]!.map((r) => r.requestsPerSec))).toString().padStart(8)}   ${name === 'seo off' ? '    -' : ratio(own, name).toFixed(2).padStart(6)}   ${b === builds[0] && name === 'seo on' ? `≥ ${GOAL}: ${on >= GOAL ? 'PASS' : 'FAIL'}` : name === 'seo off' ? '' : '(reported)'}`)
    console.log(`${`report of ${REPORT_PAGES} pages (ms)`.padEnd(32)}${median(reports.get(b.name)!).toFixed(1).padStart(8)}`)
  }
  if (builds.length > 1) {
    const base = results.get(builds[1]!.name)!
    console.log('\nthis build / baseline (median of the per-round ratios; above 1 is faster for req/s, below 1 is faster for the report)')
    for (const [name] of modes) console.log(`  ${name.padEnd(30)} req/s ${median(mine[name]!.map((r, i) => r.requestsPerSec / base[name]![i]!.requestsPerSec)).toFixed(2)}`)
    const [a, b] = [reports.get(builds[0]!.name)!, reports.get(builds[1]!.name)!]
    console.log(`  ${'report'.padEnd(30)} ms    ${median(a.map((v, i) => v / b[i]!)).toFixed(2)}`)
  }
  if (on < GOAL) process.exitCode = 1
} finally {
  for (const berth of started) {
    await berth.stop()
    await removeInstanceSites(berth)
    await berth.dispose()
  }
}
