import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeOpenAi, type FakeMessage, type FakeOpenAi, type Responder } from './fakes/openai-server'
import { api, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The AI modules (issue 14) on the compiled binary and a real Docker engine, with the FAKE
 * OpenAI-compatible provider of test/fakes (no model can run here). Three Berths, started at once:
 * - `bare`: no `ai.*` at all: translation and content are unavailable and cannot be turned on;
 * - `ai`: the fake as provider, `ai.timeout_seconds = 1`: translated pages at `/{lang}/` cached
 *   per page version, pages written from a brief, the provider's failures as 502/504, the chatbot
 *   answering from the site's pages through the model (and by search when the model fails), and
 *   one site's pages never reaching another site's visitors;
 * - `tight`: the fake, and a config file whose one plan (Performance's modules) gives no
 *   `ai_tokens_monthly`, so it gets `ai.tokens_per_site_monthly`, TIGHT_TOKENS here: room for
 *   three pages written from a brief, or two small translations at once, at their most.
 * Issue 23: visitors cannot spend a site's allowance (translations sent together, query-string
 * variants, a visitor's limit), and the model's answers are never served as markup.
 */
let fake: FakeOpenAi
let bare: Berth
let ai: Berth
let tight: Berth
type Site = { slug: string; key: string }
let plain: Site
/** Site A of the `ai` Berth: translation, content, errors and chatbot. */
let siteA: Site
/** Site B of the `ai` Berth, another account: the chatbot's tenant isolation. */
let siteB: Site
let small: Site
/** A second site of the `tight` Berth: translations sent together against its allowance. */
let crowded: Site
let configDir = ''
/** The `tight` Berth's allowance per site and month. */
const TIGHT_TOKENS = 3000

const SKU = 'svc_performance_monthly'
const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' }

/** What a page of the tests says in English, and what the fake's "translation" makes of it. */
const FRENCH: Record<string, string> = {
  'Welcome to the Harbour Bakery': 'Bienvenue à la Boulangerie du Port',
  'Fresh bread every day': 'Du pain frais chaque jour',
  'Now also open on Sundays': 'Maintenant ouvert aussi le dimanche',
}
/** The content module's page: the fake writes it with this title; tests change it. */
let pageTitle = 'Lighthouse Tours'
/** Set by a test to wrap the fake's page in a Markdown fence, as some models do. */
let fenced = false

const system = (messages: FakeMessage[]) => messages.find((m) => m.role === 'system')?.content ?? ''
const lastUser = (messages: FakeMessage[]) => messages.findLast((m) => m.role === 'user')?.content ?? ''

/** The fake model: translates the known phrases, writes pages from a brief, answers visitors tersely. */
const responder: Responder = (messages) => {
  const prompt = system(messages)
  const user = lastUser(messages)
  if (prompt.startsWith('Translate')) {
    const french = (text: string) => Object.entries(FRENCH).reduce((t, [en, fr]) => t.replaceAll(en, fr), text)
    // Berth sends the page's texts as a JSON array and wants one back; before issue 23 it sent the page.
    if (!user.startsWith('[')) return french(user.replace(/<html lang="en">/, '<html lang="fr">'))
    return JSON.stringify((JSON.parse(user) as string[]).map(french))
  }
  if (prompt.startsWith('You write web pages')) {
    const page = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>${pageTitle}</title><meta name="description" content="${pageTitle}"></head><body><h1>${pageTitle}</h1><p>Written from the brief: ${user}</p></body></html>`
    return fenced ? `\`\`\`html\n${page}\n\`\`\`` : page
  }
  // The chatbot: the first passage it was given, without the page's address (Berth must cite it).
  const passage = /^\[1\] [^\n]*\n([\s\S]*?)(?:\n\n\[2\] |\n\nQuestion: )/m.exec(user)?.[1]
  return passage ? `The site says: ${passage.replace(/\s+/g, ' ')}` : 'The passages do not say.'
}

beforeAll(async () => {
  fake = await startFakeOpenAi({ responder })
  const provider = { BERTH_AI_BASE_URL: fake.url, BERTH_AI_MODEL: 'fake-model', BERTH_AI_TIMEOUT_SECONDS: '1' }
  // Dedicated sites publish an SSH port: each Berth hands them out from a block of its own, as
  // other suites' Berths (and these three) share the engine and the host's ports.
  const sshBase = 40_000 + Math.floor(Math.random() * 80) * 300
  const ssh = (i: number) => ({ BERTH_SSH_PORT_RANGE: `${sshBase + i * 100}-${sshBase + i * 100 + 99}` })
  configDir = mkdtempSync(join(tmpdir(), 'berth-ai-config-'))
  const tightConfig = join(configDir, 'berth.toml')
  writeFileSync(tightConfig, [
    '[ai]', `tokens_per_site_monthly = ${TIGHT_TOKENS}`, '',
    '[[plans]]', 'slug = "performance"', 'name = "Performance"', 'track = "single_site"', 'hosting_type = "dedicated"',
    'price_monthly = 89', 'max_sites = 1', 'ai_modules = ["chatbot", "seo", "translation", "content"]',
    'memory_mb = 512', 'cpu_cores = 1', 'disk_gb = 5', '',
  ].join('\n'))
  ;[bare, ai, tight] = await Promise.all([
    startBerth({ env: { ...ENV, ...ssh(0) } }),
    startBerth({ env: { ...ENV, ...ssh(1), ...provider } }),
    startBerth({ env: { ...ENV, ...ssh(2), ...provider, BERTH_CONFIG: tightConfig } }),
  ])
  for (const b of [bare, ai, tight]) instanceOf(b)
  ;[plain, siteA, siteB, small, crowded] = await Promise.all([buy(bare, 'ai-bare'), buy(ai, 'ai-a'), buy(ai, 'ai-b'), buy(tight, 'ai-tight'), buy(tight, 'ai-crowd')])
}, 120_000)
afterAll(async () => {
  for (const b of [bare, ai, tight]) await b?.stop()
  for (const b of [bare, ai, tight]) await removeInstanceSites(b)
  for (const b of [bare, ai, tight]) await b?.dispose()
  await fake?.stop()
  if (configDir) rmSync(configDir, { recursive: true, force: true })
})

/** A site on the Performance plan (all four modules), bought anonymously: its own account. */
async function buy(b: Berth, stem: string): Promise<Site> {
  const slug = uniqueSlug(stem)
  const { data } = await buyDirect(b.url, { sku: SKU, slug })
  const status = await waitForSite(b.url, data.api_key, slug)
  expect(status, `site ${slug} is ${status}:\n${b.output().split('\n').filter((l) => l.includes(slug) || /error|fail/i.test(l)).join('\n')}`).toBe('active')
  return { slug, key: data.api_key as string }
}

const modules = async (b: Berth, s: Site) => {
  const res = await api(b.url, 'GET', `/sites/${s.slug}/modules/`, { key: s.key })
  expect(res.status, res.text).toBe(200)
  return Object.fromEntries((res.json.data as any[]).map((m) => [m.name, m]))
}
const toggle = (b: Berth, s: Site, name: string, enabled: boolean) => api(b.url, 'POST', `/sites/${s.slug}/modules/${name}/toggle/`, { key: s.key, body: { enabled } })
const turnOn = async (b: Berth, s: Site, name: string) => {
  const res = await toggle(b, s, name, true)
  expect(res.status, res.text).toBe(200)
  expect(res.json.data).toMatchObject({ name, enabled: true })
}
const write = async (b: Berth, s: Site, path: string, content: string) => {
  const res = await api(b.url, 'POST', `/sites/${s.slug}/files/write/`, { key: s.key, body: { path, content } })
  expect(res.status, res.text).toBeLessThan(300)
}
const read = (b: Berth, s: Site, path: string) => api(b.url, 'GET', `/sites/${s.slug}/files/read/?path=${encodeURIComponent(path)}`, { key: s.key })
const generate = (b: Berth, s: Site, body: Record<string, unknown>) => api(b.url, 'POST', `/sites/${s.slug}/modules/content/generate/`, { key: s.key, body })
/** A visitor's question to the site's chatbot, on the site's own host. */
async function ask(b: Berth, s: Site, question: string) {
  const res = await fetch(`${b.url}/__berth/chatbot/ask`, {
    method: 'POST',
    headers: { host: `${s.slug}.localhost:${b.port}`, 'content-type': 'application/json' },
    body: JSON.stringify({ question }),
  })
  return { status: res.status, json: (await res.json()) as any }
}
/**
 * A visitor's GET through the edge from a loopback address of its own (the edge counts visitors
 * by address; 127.0.0.0/8 is all the loopback's).
 */
function visitFrom(address: string, b: Berth, s: Site, path: string): Promise<{ status: number; text: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((done, fail) => {
    const req = httpRequest({ host: '127.0.0.1', port: b.port, path, localAddress: address, headers: { host: `${s.slug}.localhost:${b.port}` } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('end', () => done({ status: res.statusCode ?? 0, text, headers: res.headers }))
    })
    req.on('error', fail)
    req.end()
  })
}
/** Everything the fake was sent since its last reset, as one text. */
const sentToFake = () => JSON.stringify(fake.requests.map((r) => r.body))

const page = (body: string) => `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Harbour Bakery</title></head><body>${body}</body></html>\n`

describe('without an AI provider', () => {
  it('lists translation and content unavailable naming ai.base_url, refuses to turn them on (409); seo and chatbot work', async () => {
    const listed = await modules(bare, plain)
    for (const name of ['translation', 'content']) {
      expect(listed[name]).toMatchObject({ included: true, enabled: false, available: false })
      expect(listed[name].unavailable_reason).toContain('ai.base_url')
      const res = await toggle(bare, plain, name, true)
      expect(res.status, res.text).toBe(409)
      expect(res.json.error).toMatchObject({ code: 'CONFLICT', param: 'module_name' })
      expect(res.json.error.message).toContain('ai.base_url')
    }
    for (const name of ['seo', 'chatbot']) expect(listed[name]).toMatchObject({ included: true, available: true, unavailable_reason: null })
    // Nothing was turned on by the refusals: /fr/ is the container's own 404, untranslated.
    expect(Object.values(await modules(bare, plain)).filter((m: any) => m.enabled)).toEqual([])
    const fr = await viaEdge(bare.url, plain.slug, '/fr/')
    expect(fr.headers.get('x-berth-translation')).toBeNull()
    // The chatbot does turn on, and answers from the site's pages by search.
    await write(bare, plain, 'public/ferry.html', page('<h1>Ferry times</h1><p>The island ferry leaves the quay at noon on weekdays.</p>'))
    await turnOn(bare, plain, 'chatbot')
    const answer = await ask(bare, plain, 'When does the island ferry leave?')
    expect(answer.status).toBe(200)
    expect(answer.json.data.mode).toBe('search')
    expect(answer.json.data.answer).toContain('/ferry.html')
    expect(answer.json.data.sources.map((s: any) => s.url)).toContain('/ferry.html')
  })
})

describe('translation with a provider', () => {
  it('serves /fr/ translated by the model, cached until the page changes; other files pass through as they are', async () => {
    fake.reset()
    fake.responder = responder
    await write(ai, siteA, 'public/index.html', page('<h1>Welcome to the Harbour Bakery</h1><p>Fresh bread every day.</p>'))
    await write(ai, siteA, 'public/data.json', '{"loaves": 12, "note": "Fresh bread every day"}\n')
    await turnOn(ai, siteA, 'translation')

    const first = await viaEdge(ai.url, siteA.slug, '/fr/')
    expect(first.status).toBe(200)
    expect(first.headers.get('x-berth-translation')).toBe('miss')
    expect(first.headers.get('content-language')).toBe('fr')
    expect(first.text).toContain('Bienvenue à la Boulangerie du Port')
    expect(first.text).toContain('Du pain frais chaque jour')
    expect(first.text).not.toContain('Welcome to the Harbour Bakery')
    expect(first.text).toContain('<html lang="fr">')
    expect(fake.requests).toHaveLength(1)
    // The model was sent the page itself to translate, into French.
    const sent = fake.requests[0]!.body as { messages: FakeMessage[] }
    expect(system(sent.messages)).toContain('French')
    expect(lastUser(sent.messages)).toContain('Welcome to the Harbour Bakery')
    // The original is untouched at /.
    expect((await viaEdge(ai.url, siteA.slug, '/')).text).toContain('Welcome to the Harbour Bakery')

    const second = await viaEdge(ai.url, siteA.slug, '/fr/')
    expect(second.headers.get('x-berth-translation')).toBe('hit')
    expect(second.text).toBe(first.text)
    expect(fake.requests).toHaveLength(1)

    // The page changes: translated again, with the new text.
    await write(ai, siteA, 'public/index.html', page('<h1>Welcome to the Harbour Bakery</h1><p>Now also open on Sundays.</p>'))
    const changed = await viaEdge(ai.url, siteA.slug, '/fr/')
    expect(changed.headers.get('x-berth-translation')).toBe('miss')
    expect(changed.text).toContain('Maintenant ouvert aussi le dimanche')
    expect(changed.text).not.toContain('Du pain frais chaque jour')
    expect(fake.requests).toHaveLength(2)
    expect((await viaEdge(ai.url, siteA.slug, '/fr/')).headers.get('x-berth-translation')).toBe('hit')

    // Not a page: served as the container serves it, not sent to the model.
    const json = await viaEdge(ai.url, siteA.slug, '/fr/data.json')
    expect(json.status).toBe(200)
    expect(json.text).toBe('{"loaves": 12, "note": "Fresh bread every day"}\n')
    expect(json.headers.get('x-berth-translation')).toBeNull()
    expect(fake.requests).toHaveLength(2)

    // A page over the model's limit (48 KiB) is served untranslated, and says so.
    await write(ai, siteA, 'public/big.html', page(`<h1>Welcome to the Harbour Bakery</h1><p>${'Fresh bread every day. '.repeat(2_200)}</p>`))
    const big = await viaEdge(ai.url, siteA.slug, '/fr/big.html')
    expect(big.status).toBe(200)
    expect(big.headers.get('x-berth-translation')).toBe('too-large')
    expect(big.text).toContain('Welcome to the Harbour Bakery')
    expect(fake.requests).toHaveLength(2)
  })

  it('answers 502 when the provider fails to translate, and caches nothing from the failure', async () => {
    fake.reset()
    fake.responder = responder
    await write(ai, siteA, 'public/menu.html', page('<h1>Welcome to the Harbour Bakery</h1><p>Fresh bread every day.</p>'))
    fake.failNext(500, Infinity)
    const failed = await viaEdge(ai.url, siteA.slug, '/fr/menu.html')
    expect(failed.status).toBe(502)
    expect(JSON.parse(failed.text).error.code).toBe('UPSTREAM_ERROR')
    expect(failed.text).not.toContain('Bienvenue')
    fake.reset()
    fake.responder = responder
    const later = await viaEdge(ai.url, siteA.slug, '/fr/menu.html')
    expect(later.status).toBe(200)
    expect(later.headers.get('x-berth-translation')).toBe('miss')
    expect(later.text).toContain('Bienvenue à la Boulangerie du Port')
  })
})

describe('translation: what one visitor can make the model do', () => {
  it('serves every query string of a page from one translation: one model call, however many variants, even sent together', async () => {
    fake.reset()
    fake.responder = responder
    await turnOn(ai, siteA, 'translation')
    await write(ai, siteA, 'public/query.html', page('<h1>Welcome to the Harbour Bakery</h1><p>Fresh bread every day.</p>'))
    const together = await Promise.all([1, 2, 3, 4, 5].map((n) => visitFrom('127.0.2.1', ai, siteA, `/fr/query.html?n=${n}`)))
    for (const a of together) {
      expect(a.status).toBe(200)
      expect(a.text).toContain('Bienvenue à la Boulangerie du Port')
    }
    for (const n of [6, 7, 8, 9, 10, 11, 12]) {
      const later = await visitFrom('127.0.2.1', ai, siteA, `/fr/query.html?n=${n}&utm_source=x${n}`)
      expect(later.status).toBe(200)
      expect(later.headers['x-berth-translation']).toBe('hit')
      expect(later.text).toBe(together[0]!.text)
    }
    expect(fake.requests).toHaveLength(1)
  })

  it('lets one visitor have 10 pages translated a minute on a site, then answers 429 with Retry-After; other visitors and cached pages are served', async () => {
    fake.reset()
    fake.responder = responder
    await Promise.all(Array.from({ length: 11 }, (_, i) => write(ai, siteA, `public/visitor-${i}.html`, page(`<h1>Welcome to the Harbour Bakery</h1><p>Page ${i}.</p>`))))
    const statuses: number[] = []
    for (let i = 0; i < 10; i++) statuses.push((await visitFrom('127.0.3.1', ai, siteA, `/fr/visitor-${i}.html`)).status)
    expect(statuses).toEqual(Array(10).fill(200))
    const limited = await visitFrom('127.0.3.1', ai, siteA, '/fr/visitor-10.html')
    expect(limited.status).toBe(429)
    expect(JSON.parse(limited.text).error.code).toBe('RATE_LIMITED')
    const retryAfter = Number(limited.headers['retry-after'])
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(fake.requests).toHaveLength(10)
    // A page already translated still comes from the cache for the same visitor; another visitor is served.
    expect((await visitFrom('127.0.3.1', ai, siteA, '/fr/visitor-3.html')).headers['x-berth-translation']).toBe('hit')
    const other = await visitFrom('127.0.3.2', ai, siteA, '/fr/visitor-10.html')
    expect(other.status).toBe(200)
    expect(other.headers['x-berth-translation']).toBe('miss')
    expect(fake.requests).toHaveLength(11)
  })
})

describe('content generation', () => {
  it('writes the model\'s page from a brief (201), never over a file without overwrite (409), replaces it with overwrite', async () => {
    fake.reset()
    fake.responder = responder
    const brief = 'A page about our evening lighthouse tours for visiting families.'
    // Off: refused, nothing asked.
    const off = await generate(ai, siteA, { brief, path: 'public/new.html' })
    expect(off.status, off.text).toBe(409)
    expect(off.json.error.code).toBe('CONFLICT')
    expect(fake.requests).toHaveLength(0)
    await turnOn(ai, siteA, 'content')

    pageTitle = 'Lighthouse Tours'
    const made = await generate(ai, siteA, { brief, path: 'public/new.html' })
    expect(made.status, made.text).toBe(201)
    expect(made.json.data).toMatchObject({ path: 'public/new.html', title: 'Lighthouse Tours', overwritten: false })
    expect(made.json.data.url).toMatch(/\/new\.html$/)
    expect(made.json.data.tokens_used).toBeGreaterThan(0)
    expect(fake.requests).toHaveLength(1)
    expect(lastUser((fake.requests[0]!.body as { messages: FakeMessage[] }).messages)).toBe(brief)
    const saved = await read(ai, siteA, 'public/new.html')
    expect(saved.status).toBe(200)
    expect(saved.json.data.content).toContain('<h1>Lighthouse Tours</h1>')
    expect(saved.json.data.content).toContain(brief)
    const served = await viaEdge(ai.url, siteA.slug, '/new.html')
    expect(served.status).toBe(200)
    expect(served.text).toContain('<h1>Lighthouse Tours</h1>')

    // Again without overwrite: 409 on path, the file as it was, the model not asked.
    pageTitle = 'Harbour Cruises'
    const again = await generate(ai, siteA, { brief, path: 'public/new.html' })
    expect(again.status, again.text).toBe(409)
    expect(again.json.error).toMatchObject({ code: 'CONFLICT', param: 'path' })
    expect((await read(ai, siteA, 'public/new.html')).json.data.content).toBe(saved.json.data.content)
    expect(fake.requests).toHaveLength(1)

    // With overwrite (and a model that fences its HTML): replaced, without the fence.
    fenced = true
    const replaced = await generate(ai, siteA, { brief, path: 'public/new.html', overwrite: true }).finally(() => (fenced = false))
    expect(replaced.status, replaced.text).toBe(201)
    expect(replaced.json.data).toMatchObject({ title: 'Harbour Cruises', overwritten: true })
    const now = (await read(ai, siteA, 'public/new.html')).json.data.content as string
    expect(now).toContain('<h1>Harbour Cruises</h1>')
    expect(now).not.toContain('Lighthouse Tours')
    expect(now).not.toContain('```')
    expect((await viaEdge(ai.url, siteA.slug, '/new.html')).text).toContain('<h1>Harbour Cruises</h1>')
  })

  it('answers 502 naming the provider when it fails, 504 when it is slower than ai.timeout_seconds; nothing written', async () => {
    fake.reset()
    fake.responder = responder
    await turnOn(ai, siteA, 'content')
    fake.failNext(500, Infinity)
    const failed = await generate(ai, siteA, { brief: 'A page that the provider will fail to write.', path: 'public/failed.html' })
    expect(failed.status, failed.text).toBe(502)
    expect(failed.json.error.code).toBe('UPSTREAM_ERROR')
    expect(failed.json.error.message).toContain(fake.url)
    expect(failed.json.error.message).toContain('500')
    expect(fake.requests.length).toBeGreaterThanOrEqual(1)
    expect((await read(ai, siteA, 'public/failed.html')).status).toBe(404)

    fake.reset()
    fake.responder = responder
    fake.delayMs = 2_500
    const started = Date.now()
    const slow = await generate(ai, siteA, { brief: 'A page that the provider will be too slow to write.', path: 'public/slow.html' })
    expect(slow.status, slow.text).toBe(504)
    expect(slow.json.error.code).toBe('UPSTREAM_TIMEOUT')
    expect(slow.json.error.message).toContain(fake.url)
    expect(Date.now() - started).toBeLessThan(2_500)
    fake.delayMs = 0
    // Even once the late answer arrives, nothing is written.
    await Bun.sleep(2_600 - (Date.now() - started))
    expect((await read(ai, siteA, 'public/slow.html')).status).toBe(404)
  })
})

describe('token budget', () => {
  it('refuses with 429 and Retry-After, without asking the provider, once what is left cannot cover a call at its most', async () => {
    fake.reset()
    fake.responder = responder
    await turnOn(tight, small, 'content')
    const before = await modules(tight, small)
    expect(before.content.ai_tokens).toEqual({ monthly: TIGHT_TOKENS, used_this_month: 0 })
    // A page costs about 150 tokens but may cost 2,000 more (its max_tokens): a few fit, not six.
    let used = 0
    let written = 0
    let refused: Awaited<ReturnType<typeof generate>> | null = null
    for (let i = 1; i <= 6 && !refused; i++) {
      const made = await generate(tight, small, { brief: `Page ${i} about our budget-friendly picnic spots.`, path: `public/picnic-${i}.html` })
      if (made.status === 429) {
        refused = made
        expect((await read(tight, small, `public/picnic-${i}.html`)).status).toBe(404)
        break
      }
      expect(made.status, made.text).toBe(201)
      written++
      used += made.json.data.tokens_used as number
      expect((await modules(tight, small)).content.ai_tokens.used_this_month).toBe(used)
    }
    expect(refused, 'a call was refused').not.toBeNull()
    expect(written).toBeGreaterThanOrEqual(1)
    // The refused call never reached the provider.
    expect(fake.requests).toHaveLength(written)
    expect(refused!.json.error.code).toBe('RATE_LIMITED')
    expect(refused!.json.error.message).toContain('fewer than this call may cost')
    const retryAfter = Number(refused!.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(31 * 24 * 3600)
    const after = (await modules(tight, small)).content.ai_tokens
    expect(after.used_this_month).toBe(used)
    expect(after.used_this_month).toBeLessThanOrEqual(TIGHT_TOKENS)
  })

  it('lets translations sent together (20 visitors at once) take only what the allowance holds; the rest are refused and it is never passed', async () => {
    fake.reset()
    fake.responder = responder
    // Slow enough that all 20 are under way together (within ai.timeout_seconds = 1).
    fake.delayMs = 500
    const pages = Array.from({ length: 20 }, (_, i) => `/crowd-${i}.html`)
    await Promise.all(pages.map((p, i) => write(tight, crowded, `public${p}`, page(`<h1>Page ${i} of the harbour bakery</h1><p>${'Fresh bread every day. '.repeat(12)}</p>`))))
    await turnOn(tight, crowded, 'translation')
    // Each from its own address, so that no visitor's own limit is what refuses them.
    const answers = await Promise.all(pages.map((p, i) => visitFrom(`127.0.1.${i + 1}`, tight, crowded, `/fr${p}`))).finally(() => (fake.delayMs = 0))
    const served = answers.filter((a) => a.status === 200)
    const refused = answers.filter((a) => a.status !== 200)
    // At their most (about 1,100 tokens each) two fit in 3,000 at once; a third only once they settled.
    expect(served.length, answers.map((a) => a.status).join(' ')).toBeGreaterThanOrEqual(1)
    expect(served.length).toBeLessThanOrEqual(4)
    expect(refused.length).toBeGreaterThanOrEqual(16)
    for (const a of refused) {
      expect(a.status).toBe(429)
      expect(JSON.parse(a.text).error.code).toBe('RATE_LIMITED')
      expect(JSON.parse(a.text).error.message).toContain('AI tokens')
      expect(Number(a.headers['retry-after'])).toBeGreaterThan(0)
    }
    for (const a of served) expect(a.text).toContain('Du pain frais chaque jour')
    // Only the calls that were let through reached the provider, and the month's use stays within the allowance.
    expect(fake.requests).toHaveLength(served.length)
    const usage = (await modules(tight, crowded)).translation.ai_tokens
    expect(usage.used_this_month).toBeGreaterThan(0)
    expect(usage.used_this_month).toBeLessThanOrEqual(TIGHT_TOKENS)
  })
})

describe('chatbot with a provider', () => {
  const SCHEDULE = '<h1>Sourdough schedule</h1><p>Our sourdough loaves come out of the wood-fired oven at seven every morning.</p>'

  it('answers with the model from the retrieved passage, citing the page; by search when the model fails', async () => {
    fake.reset()
    fake.responder = responder
    await write(ai, siteA, 'public/sourdough-schedule.html', page(SCHEDULE))
    await turnOn(ai, siteA, 'chatbot')

    const answered = await ask(ai, siteA, 'When do the sourdough loaves come out of the oven?')
    expect(answered.status).toBe(200)
    expect(answered.json.data.mode).toBe('model')
    expect(answered.json.data.answer).toMatch(/^The site says: .*at seven every morning/)
    expect(answered.json.data.answer).toContain('/sourdough-schedule.html')
    expect(answered.json.data.sources.map((s: any) => s.url)).toContain('/sourdough-schedule.html')
    // Retrieval-augmented: the model was sent the page's passage along with the question.
    expect(fake.requests).toHaveLength(1)
    const prompt = lastUser((fake.requests[0]!.body as { messages: FakeMessage[] }).messages)
    expect(prompt).toContain('at seven every morning')
    expect(prompt).toContain('/sourdough-schedule.html')
    expect(prompt).toContain('When do the sourdough loaves come out of the oven?')

    fake.failNext(500, Infinity)
    const fallback = await ask(ai, siteA, 'What time is the sourdough ready?')
    expect(fallback.status).toBe(200)
    expect(fallback.json.data.mode).toBe('search')
    expect(fallback.json.data.answer).toContain('/sourdough-schedule.html')
    expect(fallback.json.data.answer).not.toContain('The site says')
    expect(fallback.json.data.answer).toContain('seven every morning')
    expect(fallback.json.data.sources.map((s: any) => s.url)).toContain('/sourdough-schedule.html')
  })

  it('never answers a site\'s visitors from another account\'s site', async () => {
    fake.reset()
    fake.responder = responder
    // Site A (previous test) has the sourdough page and the chatbot on; site B gets its own page.
    await write(ai, siteB, 'public/kayaks.html', page('<h1>Kayak rental</h1><p>Kayaks are rented by the hour from the north beach hut.</p>'))
    await turnOn(ai, siteB, 'chatbot')
    const onA = await ask(ai, siteA, 'When do the sourdough loaves come out of the oven?')
    expect(onA.json.data.sources.map((s: any) => s.url)).toContain('/sourdough-schedule.html')

    fake.reset()
    fake.responder = responder
    const onB = await ask(ai, siteB, 'When do the sourdough loaves come out of the oven?')
    expect(onB.status).toBe(200)
    const text = JSON.stringify(onB.json.data)
    expect(text).not.toContain('sourdough-schedule')
    expect(text).not.toContain('seven every morning')
    expect(text).not.toContain('wood-fired')
    expect(text).not.toContain(siteA.slug)
    // Nor was site A's page put before the model on site B's behalf.
    expect(sentToFake()).not.toContain('seven every morning')
    expect(sentToFake()).not.toContain('sourdough-schedule')

    // Site B's own page does answer there (the question above could have been answered).
    const own = await ask(ai, siteB, 'Where are kayaks rented?')
    expect(own.json.data.sources.map((s: any) => s.url)).toContain('/kayaks.html')
    expect(JSON.stringify(own.json.data)).not.toContain('sourdough')
  })
})

describe('the model\'s answers are never served as markup', () => {
  /** What a hostile (prompt-injected) or careless model writes: each would run in a visitor's browser. */
  const PWN = 'window.__pwned = (window.__pwned || 0) + 1'
  const HOSTILE = [`<script>${PWN}</script>`, `<img src=x onerror="${PWN}">`, `<a href="javascript:${PWN}">Click here</a>`]
  let hostilePage = ''
  const hostile: Responder = (messages) => {
    const prompt = system(messages)
    const user = lastUser(messages)
    if (prompt.startsWith('Translate')) {
      let texts: unknown = null
      try {
        texts = JSON.parse(user)
      } catch {}
      if (Array.isArray(texts)) return JSON.stringify(texts.map((_, i) => `Traduit ${HOSTILE[i % HOSTILE.length]}`))
      // Sent the whole page (as Berth did before issue 23): it un-escapes the page's text and adds its own.
      return user.replace('&lt;script&gt;', '<script>').replace('&lt;/script&gt;', '</script>').replace('</h1>', `</h1>${HOSTILE.join('')}`)
    }
    if (prompt.startsWith('You write web pages')) return hostilePage
    return `Voici la réponse ${HOSTILE[1]}`
  }
  let browser: Browser
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] })
  })
  afterAll(async () => {
    await browser?.close()
  })
  /** What a visitor's browser ran and made of a page. */
  async function inBrowser(path: string, act?: (p: import('playwright-core').Page) => Promise<void>) {
    const tab = await browser.newPage()
    try {
      await tab.goto(`http://${siteA.slug}.localhost:${ai.port}${path}`)
      await act?.(tab)
      await Bun.sleep(300)
      return await tab.evaluate(() => ({
        pwned: (window as { __pwned?: number }).__pwned ?? 0,
        scripts: document.querySelectorAll('script:not([data-berth-chatbot])').length,
        handlers: document.querySelectorAll('[onerror], [onclick], [onload]').length,
        jsLinks: document.querySelectorAll('a[href^="javascript"]').length,
        text: document.body.textContent ?? '',
      }))
    } finally {
      await tab.close()
    }
  }

  it('translation: the model\'s markup is served escaped, as text, and cached that way', async () => {
    fake.reset()
    fake.responder = hostile
    await turnOn(ai, siteA, 'translation')
    await write(ai, siteA, 'public/guest.html', page('<h1>Guest book</h1><p>A visitor wrote: &lt;script&gt;window.__pwned = 1&lt;/script&gt;</p><p>Lovely bread.</p>'))
    const first = await visitFrom('127.0.4.1', ai, siteA, '/fr/guest.html')
    expect(first.status).toBe(200)
    expect(fake.requests).toHaveLength(1)
    for (const text of [first.text, (await visitFrom('127.0.4.1', ai, siteA, '/fr/guest.html')).text]) {
      expect(text).not.toContain('<script>')
      expect(text).not.toMatch(/<img[^>]*onerror/i)
      expect(text).not.toMatch(/<a[^>]*javascript:/i)
      expect(text).toContain('Traduit &lt;script&gt;')
    }
    const seen = await inBrowser('/fr/guest.html')
    expect(seen).toMatchObject({ pwned: 0, scripts: 0, handlers: 0, jsLinks: 0 })
    expect(seen.text).toContain(`Traduit <script>${PWN}</script>`)
  })

  it.each([
    ['<script>', `<p>Tours</p>${HOSTILE[0]}`, 'the element <script>'],
    ['onerror=', `<p>Tours</p>${HOSTILE[1]}`, 'the attribute onerror'],
    ['javascript:', `<p>Tours ${HOSTILE[2]}</p>`, 'the URL'],
  ])('content: a page with %s is refused (502), not written, not served', async (_, body, reason) => {
    fake.reset()
    fake.responder = hostile
    await turnOn(ai, siteA, 'content')
    hostilePage = `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Tours</title></head><body><h1>Tours</h1>${body}</body></html>`
    const path = `public/hostile-${reason.length}.html`
    const made = await generate(ai, siteA, { brief: 'A page about our evening lighthouse tours.', path })
    expect(made.status, made.text).toBe(502)
    expect(made.json.error.code).toBe('UPSTREAM_ERROR')
    expect(made.json.error.message).toContain(reason)
    expect(made.json.error.message).toContain('nothing was written')
    expect(fake.requests).toHaveLength(1)
    expect((await read(ai, siteA, path)).status).toBe(404)
    const served = await viaEdge(ai.url, siteA.slug, `/${path.slice('public/'.length)}`)
    expect(served.text).not.toContain(PWN)
  })

  it('chatbot: the model\'s answer is JSON text (nosniff), and the widget shows it as text', async () => {
    fake.reset()
    fake.responder = hostile
    await turnOn(ai, siteA, 'chatbot')
    await write(ai, siteA, 'public/index.html', page('<h1>Welcome to the Harbour Bakery</h1><p>Our sourdough comes out of the wood-fired oven at seven.</p>'))
    const res = await fetch(`${ai.url}/__berth/chatbot/ask`, {
      method: 'POST',
      headers: { host: `${siteA.slug}.localhost:${ai.port}`, 'content-type': 'application/json' },
      body: JSON.stringify({ question: 'When is the sourdough ready?' }),
    })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    const answer = (await res.json()) as any
    expect(answer.data.mode).toBe('model')
    expect(answer.data.answer).toContain(HOSTILE[1])

    const seen = await inBrowser('/', async (tab) => {
      await tab.getByRole('button', { name: 'Ask this site' }).click()
      await tab.getByLabel('Your question').fill('sourdough oven')
      await tab.getByLabel('Your question').press('Enter')
      await tab.locator('#berth-chatbot p[data-who="bot"]').waitFor()
    })
    expect(seen).toMatchObject({ pwned: 0, handlers: 0 })
    expect(seen.text).toContain(`Voici la réponse ${HOSTILE[1]}`)
  })
})
