import { gunzipSync } from 'node:zlib'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The seo and chatbot modules on real sites through Berth's edge (issue 14), without an AI
 * provider (the embedded default): what a visitor's browser and a search engine get.
 */
const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' }
let berth: Berth
let browser: Browser
let slug: string
let key: string

const INDEX = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Harbour Bakery</title></head>
<body><h1>Harbour Bakery</h1><p>Fresh sourdough every morning at the old harbour, baked in a wood oven since 1982.</p></body></html>
`
const ABOUT = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"></head>
<body><h1>About the bakers</h1><p>Our croissants use butter from the Kamouraska dairy cooperative.</p></body></html>
`
const DATA = '{"loaves": 42, "note": "</head> is not a page"}\n'

const host = () => `${slug}.localhost:${berth.port}`
/** A request through the edge, as a visitor's client sends it. */
async function visit(path: string, init: RequestInit & { headers?: Record<string, string> } = {}) {
  const res = await fetch(`${berth.url}${path}`, { ...init, headers: { host: host(), ...init.headers }, decompress: false } as RequestInit)
  return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) }
}
const text = (b: Uint8Array) => new TextDecoder().decode(b)
const write = async (path: string, content: string) => expect((await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path, content } })).status).toBe(200)
const toggle = async (module: string, enabled: boolean) => {
  const res = await api(berth.url, 'POST', `/sites/${slug}/modules/${module}/toggle/`, { key, body: { enabled } })
  expect(res.status, res.text).toBe(200)
  expect(res.json.data.enabled).toBe(enabled)
}
const ask = async (question: string, onHost = host()) => {
  const res = await fetch(`${berth.url}/__berth/chatbot/ask`, { method: 'POST', headers: { host: onHost, 'content-type': 'application/json' }, body: JSON.stringify({ question }) })
  return { status: res.status, json: await res.json().catch(() => null) }
}

beforeAll(async () => {
  berth = await startBerth({ env: ENV })
  instanceOf(berth)
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] })
  slug = uniqueSlug('mods')
  // Business VPS: nginx + PHP-FPM in the container (gzip on, as a real site), seo and chatbot included.
  key = (await buyDirect(berth.url, { slug, sku: 'svc_business_monthly' })).data.api_key as string
  expect(await waitForSite(berth.url, key, slug, 120_000)).toBe('active')
  await write('public/index.html', INDEX)
  await write('public/about/index.html', ABOUT)
  await write('public/data.json', DATA)
}, 180_000)
afterAll(async () => {
  await browser?.close()
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
}, 120_000)

describe('seo module through the edge', () => {
  it('lists the modules with what this server can run: seo and chatbot without a provider, translation and content need one', async () => {
    const list = await api(berth.url, 'GET', `/sites/${slug}/modules/`, { key })
    const by = Object.fromEntries(list.json.data.map((m: { name: string }) => [m.name, m]))
    expect(by.seo).toMatchObject({ included: true, enabled: false, available: true, unavailable_reason: null })
    expect(by.chatbot).toMatchObject({ included: true, available: true })
    expect(by.translation).toMatchObject({ included: false, available: false })
    expect(by.translation.unavailable_reason).toContain('ai.base_url')
  })

  it('off: pages go out exactly as written and /sitemap.xml is the container’s (its front controller)', async () => {
    const page = await visit('/')
    expect(page.status).toBe(200)
    expect(text(page.bytes)).toBe(INDEX)
    expect(text((await visit('/sitemap.xml')).bytes)).not.toContain('<urlset')
  })

  it('on: a sitemap of the pages, robots.txt naming it, and the missing head tags, the page’s own kept', async () => {
    await toggle('seo', true)
    const sitemap = await visit('/sitemap.xml')
    expect(sitemap.status).toBe(200)
    expect(sitemap.headers.get('content-type')).toContain('xml')
    const locs = [...text(sitemap.bytes).matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1])
    expect(locs).toEqual([`http://${host()}/`, `http://${host()}/about/`])
    expect(text((await visit('/robots.txt')).bytes)).toContain(`Sitemap: http://${host()}/sitemap.xml`)

    const home = text((await visit('/')).bytes)
    expect(home.match(/<title>/g)).toHaveLength(1) // its own title, not a second one
    expect(home).toContain('<title>Harbour Bakery</title>')
    expect(home).toContain('<meta name="description" content="Fresh sourdough every morning at the old harbour, baked in a wood oven since 1982.">')
    expect(home).toContain(`<link rel="canonical" href="http://${host()}/">`)
    expect(home).toContain('<meta property="og:title" content="Harbour Bakery">')
    // What came after the head is untouched.
    expect(home.slice(home.indexOf('</head>'))).toBe(INDEX.slice(INDEX.indexOf('</head>')))
    const about = text((await visit('/about/')).bytes)
    expect(about).toContain('<title>About the bakers</title>') // from its heading
  })

  it('on: a compressed page is decoded, added to and compressed again, with the right length', async () => {
    // A PHP page that sends its HTML gzip-compressed with a length, as a cache plugin would.
    await write('public/gz.php', `<?php $html = ${JSON.stringify(INDEX)}; $gz = gzencode($html); header('Content-Type: text/html; charset=utf-8'); header('Content-Encoding: gzip'); header('Content-Length: ' . strlen($gz)); echo $gz;`)
    const page = await visit('/gz.php', { headers: { 'accept-encoding': 'gzip' } })
    expect(page.status).toBe(200)
    expect(page.headers.get('content-encoding')).toBe('gzip')
    expect(Number(page.headers.get('content-length') ?? page.bytes.length)).toBe(page.bytes.length)
    const html = gunzipSync(page.bytes).toString('utf8')
    expect(html).toContain(`<meta property="og:url" content="http://${host()}/gz.php">`)
    expect(html.slice(html.indexOf('</head>'))).toBe(INDEX.slice(INDEX.indexOf('</head>')))
  })

  it('on: a response that is not an HTML page is untouched, byte for byte', async () => {
    const json = await visit('/data.json')
    expect(json.status).toBe(200)
    expect(text(json.bytes)).toBe(DATA)
  })

  it('on: the site’s own robots.txt wins over the generated one', async () => {
    await write('public/robots.txt', 'User-agent: *\nDisallow: /private/\n')
    expect(text((await visit('/robots.txt')).bytes)).toBe('User-agent: *\nDisallow: /private/\n')
  })

  it('reports what each page lacks, and what the module fixes as pages are served', async () => {
    const res = await api(berth.url, 'GET', `/sites/${slug}/modules/seo/report/`, { key })
    expect(res.status).toBe(200)
    const about = res.json.data.pages.find((p: { url: string }) => p.url === '/about/')
    const codes = about.problems.map((p: { code: string }) => p.code)
    expect(codes).toContain('missing_title')
    expect(codes).toContain('missing_description')
    expect(about.problems.find((p: { code: string }) => p.code === 'missing_title').fixed_at_edge).toBe(true)
    const home = res.json.data.pages.find((p: { url: string }) => p.url === '/')
    expect(home.problems.map((p: { code: string }) => p.code)).not.toContain('missing_title')
  })

  it('off again: every trace is gone', async () => {
    await toggle('seo', false)
    expect(text((await visit('/')).bytes)).toBe(INDEX)
    expect(text((await visit('/sitemap.xml')).bytes)).not.toContain('<urlset')
  })
})

describe('chatbot module through the edge', () => {
  it('on: the widget is on every page, and a question is answered from the page that says it, linked', async () => {
    await toggle('chatbot', true)
    const home = text((await visit('/')).bytes)
    expect(home).toContain('<script src="/__berth/chatbot.js" defer data-berth-chatbot></script></head>')
    const script = await visit('/__berth/chatbot.js')
    expect(script.status).toBe(200)
    expect(script.headers.get('content-type')).toContain('javascript')
    const answer = await ask('Where does the butter for the croissants come from?')
    expect(answer.status).toBe(200)
    expect(answer.json.data.mode).toBe('search')
    expect(answer.json.data.answer).toContain('Kamouraska')
    expect(answer.json.data.sources[0]).toEqual({ url: '/about/', title: 'About the bakers' })
  })

  it('follows the files: a changed page changes the answer at once', async () => {
    await write('public/about/index.html', ABOUT.replace('the Kamouraska dairy cooperative', 'a farm in Charlevoix'))
    const answer = await ask('Where does the butter for the croissants come from?')
    expect(answer.json.data.answer).toContain('Charlevoix')
    expect(answer.json.data.answer).not.toContain('Kamouraska')
  })

  it('answers in a real browser: the widget opens, takes the question and shows the answer with its link', async () => {
    const page = await browser.newPage()
    // The site's name resolves to the loopback here (RFC 6761 .localhost), as for any visitor of a test install.
    await page.goto(`http://${host()}/`)
    await page.getByRole('button', { name: 'Ask this site' }).click()
    await page.getByLabel('Your question').fill('wood oven sourdough')
    await page.getByLabel('Your question').press('Enter')
    const reply = page.locator('#berth-chatbot p[data-who="bot"]')
    await reply.waitFor()
    expect(await reply.textContent()).toContain('sourdough')
    expect(await reply.locator('a').first().getAttribute('href')).toBe('/')
    await page.close()
  })

  it('refuses what is not a question, and more than 10 a minute from one visitor', async () => {
    expect((await ask('')).status).toBe(422)
    const bad = await fetch(`${berth.url}/__berth/chatbot/ask`, { method: 'POST', headers: { host: host() }, body: 'not json' })
    expect(bad.status).toBe(400)
    const statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await ask('bakery')).status)
    expect(statuses).toContain(429)
    const limited = await ask('bakery')
    expect(limited.status).toBe(429)
    expect(limited.json.error.code).toBe('RATE_LIMITED')
  })

  it('off: the widget, the script and the endpoint are gone', async () => {
    await toggle('chatbot', false)
    expect(text((await visit('/')).bytes)).toBe(INDEX)
    // What answers now is the site's own front controller, not the widget or the chatbot.
    expect(text((await visit('/__berth/chatbot.js')).bytes)).not.toContain('__berthChatbot')
    expect((await ask('bakery')).json?.data?.sources).toBeUndefined()
  })
})
