import { mkdtempSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { hostHome, instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * Issue 23, part 2, through the compiled binary on a real site: the modules read a site's files
 * as root on the host, and the tenant, from a shell in the container, swaps public/blog for a
 * symbolic link to a host folder over and over while the SEO report, the sitemap and the chatbot
 * run. A link's target is resolved on the host, by Berth: whatever it names, Berth could read.
 * The host folder's page (title, text, file name) must never come out.
 */
const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' }
const CANARY = 'Qwzvcanary'
let berth: Berth
let slug: string
let key: string
let outside: string

const page = (title: string, words: string) => `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${title}</title></head>\n<body><h1>${title}</h1><p>${words}</p></body></html>\n`
const host = () => `${slug}.localhost:${berth.port}`
const write = async (path: string, content: string) => expect((await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path, content } })).status).toBe(200)
const toggle = async (module: string, enabled: boolean) => expect((await api(berth.url, 'POST', `/sites/${slug}/modules/${module}/toggle/`, { key, body: { enabled } })).status).toBe(200)
const report = async () => {
  const res = await api(berth.url, 'GET', `/sites/${slug}/modules/seo/report/`, { key })
  expect(res.status, res.text).toBe(200)
  return res.text
}

beforeAll(async () => {
  outside = mkdtempSync(join(tmpdir(), 'berth-host-secrets-'))
  for (const name of ['index.html', `${CANARY}-secret.html`]) writeFileSync(join(outside, name), page(`${CANARY} host title`, `${CANARY} private words of the host.`))
  berth = await startBerth({ env: ENV })
  instanceOf(berth)
  slug = uniqueSlug('swap')
  key = (await buyDirect(berth.url, { slug, sku: 'svc_business_monthly' })).data.api_key as string
  expect(await waitForSite(berth.url, key, slug, 120_000)).toBe('active')
  await write('public/index.html', page('Harbour Bakery', 'Fresh sourdough every morning.'))
  await write('public/blog/index.html', page('Bakery blog', 'Our sourdough story, told by the bakers.'))
  await toggle('seo', true)
  await toggle('chatbot', true)
}, 180_000)
afterAll(async () => {
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
  rmSync(outside, { recursive: true, force: true })
}, 120_000)

describe('a folder swapped for a link to the host while the modules read the site', () => {
  it('the SEO report, the sitemap and the chatbot never show the host folder’s page', async () => {
    // The tenant's loop, in the container as the site user, until ~/stop appears.
    const loop = siteShell(berth, slug, `cd ~/public && ln -s ${outside} blog.link && while [ ! -e ~/stop ]; do
      mv -T blog blog.real; mv -T blog.link blog; mv -T blog blog.link; mv -T blog.real blog; done; rm -f blog.link`)
    const seen: string[] = []
    let blogSeen = 0
    const until = performance.now() + 12_000
    let asked = 0
    for (let round = 0; performance.now() < until; round++) {
      const r = await report()
      seen.push(r)
      if (r.includes('"title":"Bakery blog"')) blogSeen++
      // A write through the API makes the sitemap and the chatbot's index again.
      await write('public/tick.txt', String(round))
      const sitemap = await fetch(`${berth.url}/sitemap.xml`, { headers: { host: host() } }).then((res) => res.text())
      expect(sitemap).toContain('<urlset')
      seen.push(sitemap)
      if (round % 4 === 0 && asked < 9) {
        asked++
        const res = await fetch(`${berth.url}/__berth/chatbot/ask`, { method: 'POST', headers: { host: host(), 'content-type': 'application/json' }, body: JSON.stringify({ question: `${CANARY} private words host` }) })
        expect(res.status).toBe(200)
        seen.push(await res.text())
      }
    }
    await write('stop', '')
    expect((await loop).code).toBe(0)
    expect(seen.filter((s) => s.includes(CANARY))).toEqual([])
    expect(blogSeen).toBeGreaterThan(0) // the race was live: the blog's own page was read on some runs
    expect(asked).toBeGreaterThan(2)
  }, 60_000)

  it('a page far larger than the report reads (16 GB, sparse) is reported from its first bytes, not read whole', async () => {
    const home = await hostHome(berth, slug)
    writeFileSync(join(home, 'public', 'huge.html'), page('Huge page', 'The start of a very long page.'))
    truncateSync(join(home, 'public', 'huge.html'), 16 * 1024 ** 3)
    const started = performance.now()
    const res = JSON.parse(await report()) as { data: { pages: { url: string; title: string | null }[] } }
    expect(performance.now() - started).toBeLessThan(5_000)
    // Read whole, it would not fit in memory: the page would show no title at all.
    expect(res.data.pages.find((p) => p.url === '/huge.html')?.title).toBe('Huge page')
    rmSync(join(home, 'public', 'huge.html'))
  })
})
