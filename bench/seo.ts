/**
 * `bun run bench:seo`: a site's HTML page through Berth's edge with the seo module on against the
 * same page with it off, same run, same load tool (issue 14). With seo on, every page is held,
 * its head read and the missing tags added; the goal is at least 0.85 of the requests per second
 * with it off. Also with the chatbot on as well (the widget's script tag added), reported.
 *
 * `dist/berth serve` on a fresh data folder; one Business VPS site (nginx + PHP-FPM, kept-alive
 * connections) bought through a checkout; a 3 KB page written through the files API; wrk -t2
 * -c64, 3 s warm-up + 10 s, 3 interleaved rounds (off, on, on + chatbot); the figure is the
 * median of the per-round ratios.
 */
import { join } from 'node:path'
import { api, startBerth } from '../test/helpers/binary'
import { buyDirect, waitForSite } from '../test/helpers/purchase'
import { instanceOf, removeInstanceSites } from '../test/helpers/sites'
import { cleanupOnExit, tempDir } from './processes'
import { median } from './stats'
import { measure, warmUp, WRK_SETTINGS, wrkInstalled, type WrkResult } from './wrk'

const GOAL = 0.85
const ROUNDS = Number(process.env.ROUNDS ?? 3)

if (!wrkInstalled()) throw new Error('wrk is not installed; install it with: apt-get install wrk')
cleanupOnExit()
const dir = tempDir('berth-bench-seo-')
const berth = await startBerth({ dataDir: join(dir, 'data'), env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
instanceOf(berth)
try {
  const slug = `seobench${Date.now().toString(36)}`
  const key = (await buyDirect(berth.url, { slug, sku: 'svc_business_monthly' })).data.api_key as string
  if ((await waitForSite(berth.url, key, slug, 120_000)) !== 'active') throw new Error(`the site ${slug} did not become active`)
  const paragraphs = Array.from({ length: 30 }, (_, i) => `<p>Paragraph ${i} of the bakery's story: sourdough, croissants and the harbour at dawn.</p>`).join('\n')
  const page = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Harbour Bakery</title></head>\n<body><h1>Harbour Bakery</h1>\n${paragraphs}\n</body></html>\n`
  await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/index.html', content: page } })
  const set = async (module: string, enabled: boolean) => {
    const res = await api(berth.url, 'POST', `/sites/${slug}/modules/${module}/toggle/`, { key, body: { enabled } })
    if (res.status !== 200) throw new Error(`toggle ${module}: ${res.status} ${res.text}`)
  }
  const target = (name: string) => ({ name, url: `${berth.url}/`, pid: berth.proc.pid, headers: { Host: `${slug}.localhost:${berth.port}` } })
  const modes: [string, () => Promise<void>][] = [
    ['seo off', async () => { await set('seo', false); await set('chatbot', false) }],
    ['seo on', async () => { await set('seo', true); await set('chatbot', false) }],
    ['seo + chatbot on', async () => { await set('seo', true); await set('chatbot', true) }],
  ]
  console.log(`SEO: a ${page.length}-byte page through Berth's edge, module off vs on; wrk -t${WRK_SETTINGS.threads} -c${WRK_SETTINGS.connections}, ${WRK_SETTINGS.warmupSeconds} s warm-up + ${WRK_SETTINGS.durationSeconds} s, ${ROUNDS} rounds`)
  const results: Record<string, WrkResult[]> = {}
  for (let round = 1; round <= ROUNDS; round++) {
    for (const [name, apply] of modes) {
      await apply()
      const probe = await fetch(`${berth.url}/`, { headers: { host: `${slug}.localhost:${berth.port}` } }).then((r) => r.text())
      if (name !== 'seo off' && !probe.includes('og:title')) throw new Error(`${name}: the page has no added tags`)
      await warmUp(target(name))
      const r = await measure(target(name))
      if (r.non2xx > 0) throw new Error(`${name}: ${r.non2xx} answers outside 2xx`)
      ;(results[name] ??= []).push(r)
      console.log(`  round ${round}/${ROUNDS} ${name.padEnd(18)} ${Math.round(r.requestsPerSec).toString().padStart(7)} req/s  p50 ${r.p50Ms.toFixed(2)} ms  p99 ${r.p99Ms.toFixed(2)} ms`)
    }
  }
  const ratio = (name: string) => median(results[name]!.map((r, i) => r.requestsPerSec / results['seo off']![i]!.requestsPerSec))
  const on = ratio('seo on')
  console.log('\nFigure                          req/s (median)   vs off   goal')
  for (const [name] of modes) console.log(`${name.padEnd(32)}${Math.round(median(results[name]!.map((r) => r.requestsPerSec))).toString().padStart(8)}   ${name === 'seo off' ? '    -' : ratio(name).toFixed(2).padStart(6)}   ${name === 'seo on' ? `≥ ${GOAL}: ${on >= GOAL ? 'PASS' : 'FAIL'}` : name === 'seo off' ? '' : '(reported)'}`)
  if (on < GOAL) process.exitCode = 1
} finally {
  await berth.stop()
  await removeInstanceSites(berth)
  await berth.dispose()
}
