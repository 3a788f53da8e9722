import { spawnSync } from 'bun'
import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { BINARY, startBerth, type Berth } from './helpers/binary'

/**
 * The discovery documents of the compiled binary, as an agent that knows only site_url finds
 * them: each parses, every link in them resolves, a plan added with `berth plans add` to the
 * running server shows in all of them at once, and the two pages render in Chromium (their
 * screenshots are kept in test-artifacts/).
 */
let berth: Berth
let browser: Browser
const ARTIFACTS = resolve(import.meta.dirname, '..', 'test-artifacts')

const DOCUMENTS = {
  '/.well-known/acp.json': 'application/json; charset=utf-8',
  '/.well-known/mcp.json': 'application/json; charset=utf-8',
  '/.well-known/ai-plugin.json': 'application/json; charset=utf-8',
  '/api/pricing.json': 'application/json; charset=utf-8',
  '/llms.txt': 'text/plain; charset=utf-8',
  '/for-agents': 'text/html; charset=utf-8',
  '/agent-native/': 'text/html; charset=utf-8',
}

/** Endpoints the documents name as POST targets (register, open a checkout), not documents. */
const POST_ENDPOINTS = ['/api/v1/auth/register/', '/api/v1/acp/checkouts/']

beforeAll(async () => {
  berth = await startBerth()
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] })
  mkdirSync(ARTIFACTS, { recursive: true })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await berth?.dispose()
})

/** Every absolute URL on this server that a document names (JSON strings, Markdown links, href/src). */
function linksIn(text: string, base: string): string[] {
  const found = new Set<string>()
  for (const m of text.matchAll(/(?:"|\(|href="|src=")(https?:\/\/[^"()\s<>]+)/g)) {
    const url = m[1]!
    if (url.startsWith(base) && !url.includes('{')) found.add(url.split('#')[0]!)
  }
  return [...found]
}

describe('discovery documents of the binary', () => {
  it('answers every document with its type and a body that parses, and every link in them resolves', async () => {
    const links = new Set<string>()
    for (const [path, type] of Object.entries(DOCUMENTS)) {
      const res = await fetch(`${berth.url}${path}`)
      expect(res.status, path).toBe(200)
      expect(res.headers.get('content-type'), path).toBe(type)
      expect(res.headers.get('cache-control'), path).toBe('public, max-age=300')
      const text = await res.text()
      if (type.startsWith('application/json')) expect(() => JSON.parse(text), path).not.toThrow()
      for (const link of linksIn(text, berth.url)) links.add(link)
    }
    // Each document links to the others and to the API's own documents.
    for (const path of [...Object.keys(DOCUMENTS), '/api/v1/openapi.json', '/logo.svg', '/mcp/']) expect(links, path).toContain(`${berth.url}${path}`)
    for (const link of links) {
      // api_base_url is a base agents append paths to (ACP discovery), not a document.
      if (link === `${berth.url}/api/v1`) continue
      if (new URL(link).pathname === '/mcp/') {
        // The MCP endpoint answers POSTs: an initialize is its 200.
        const init = await fetch(link, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'discovery-test', version: '1' } } }),
        })
        expect(init.status, link).toBe(200)
        continue
      }
      const res = await fetch(link)
      await res.arrayBuffer()
      if (POST_ENDPOINTS.includes(new URL(link).pathname)) {
        // An endpoint the documents name with POST: it exists, and says so to a GET.
        expect(res.status, link).toBe(405)
        expect(res.headers.get('allow'), link).toContain('POST')
        continue
      }
      expect(res.status, link).toBe(200)
    }
  })

  it('describes the MCP endpoint truthfully: the card lists the tools a session lists', async () => {
    const card = await (await fetch(`${berth.url}/.well-known/mcp.json`)).json()
    const remote = card.remotes[0]
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    const init = await fetch(remote.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: remote.supportedProtocolVersions[0], capabilities: {}, clientInfo: { name: 'card-test', version: '1' } } }) })
    const session = init.headers.get('mcp-session-id')!
    expect((await init.json()).result.protocolVersion).toBe(remote.supportedProtocolVersions[0])
    const h = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': remote.supportedProtocolVersions[0] }
    await fetch(remote.url, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
    const list = await (await fetch(remote.url, { method: 'POST', headers: h, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) })).json()
    expect(card.tools.map((t: { name: string }) => t.name)).toEqual(list.result.tools.map((t: { name: string }) => t.name))
  })

  it('shows a plan added with `berth plans add` on the running server in every document at once', async () => {
    const added = spawnSync([BINARY, 'plans', 'add', '--data-dir', berth.dataDir, '--slug', 'dockside', '--name', 'Dockside', '--track', 'single_site', '--hosting-type', 'vps', '--monthly', '15', '--ai-modules', 'seo,chatbot', '--ai-tokens', '75000'], { stdout: 'pipe', stderr: 'pipe', env: { PATH: process.env.PATH ?? '' } })
    expect(added.exitCode, added.stderr.toString()).toBe(0)
    // berth serve made the change (the command asked it over its admin socket): its caches know at once.
    for (const path of Object.keys(DOCUMENTS).filter((p) => p !== '/.well-known/mcp.json' && p !== '/.well-known/ai-plugin.json')) {
      const text = await (await fetch(`${berth.url}${path}`)).text()
      expect(text, path).toContain('svc_dockside_monthly')
    }
    const pricing = await (await fetch(`${berth.url}/api/pricing.json`)).json()
    const dockside = pricing.plans.find((p: { slug: string }) => p.slug === 'dockside')
    expect(dockside.prices[0]).toMatchObject({ amount: 15, amount_cents: 1500 })
    expect(dockside.features).toMatchObject({ ai_modules: ['seo', 'chatbot'], ai_tokens_monthly: 75_000 })
    const plan = await (await fetch(`${berth.url}/api/v1/plans/dockside/`)).json()
    expect(plan.data.features).toEqual(dockside.features)
  })

  it('renders both pages in Chromium with no request refused by their policy, and keeps a screenshot of each', async () => {
    for (const [path, file] of [['/for-agents', 'for-agents.png'], ['/agent-native/', 'agent-native.png']] as const) {
      const page = await browser.newPage({ viewport: { width: 1100, height: 900 } })
      const problems: string[] = []
      page.on('console', (m) => {
        if (m.type() === 'error') problems.push(m.text())
      })
      page.on('requestfailed', (r) => problems.push(`${r.url()} ${r.failure()?.errorText}`))
      const res = await page.goto(`${berth.url}${path}`)
      expect(res?.status(), path).toBe(200)
      expect(await page.locator('h1').first().textContent(), path).toBeTruthy()
      // The logo loads under the page's own content policy.
      expect(await page.locator('header img').evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth > 0), path).toBe(true)
      // Every plan on sale is on the page, with its monthly SKU.
      const plans = (await (await fetch(`${berth.url}/api/pricing.json`)).json()).plans as { prices: { sku: string }[] }[]
      const text = (await page.locator('body').textContent()) ?? ''
      for (const p of plans) expect(text, path).toContain(p.prices[0]!.sku)
      await page.screenshot({ path: join(ARTIFACTS, file), fullPage: true })
      expect(problems, path).toEqual([])
      await page.close()
    }
  })
})
