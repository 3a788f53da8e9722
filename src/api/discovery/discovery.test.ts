import { afterAll, describe, expect, it } from 'vitest'
import { inProcess } from '../../../test/helpers/in-process'
import { toolsFromOpenApi } from '../mcp/tools'

/** The discovery documents in-process, on a real SQLite catalog. */
const h = inProcess({ env: { BERTH_SERVER_SITE_URL: 'https://hosting.example.net', BERTH_BRAND_NAME: 'Harbour & Co' } })
afterAll(() => h.close())

const JSON_DOCS = ['/.well-known/acp.json', '/.well-known/mcp.json', '/.well-known/ai-plugin.json', '/api/pricing.json']
const TEXT_DOCS = ['/llms.txt', '/for-agents', '/agent-native/']
const get = (path: string, headers: Record<string, string> = {}) => h.call('GET', path, { headers })

describe('discovery documents', () => {
  it('answers each document with its content type, caching headers and a body that parses', async () => {
    for (const path of JSON_DOCS) {
      const res = await get(path)
      expect(res.status, path).toBe(200)
      expect(res.headers.get('content-type'), path).toBe('application/json; charset=utf-8')
      expect(res.headers.get('cache-control'), path).toBe('public, max-age=300')
      expect(res.headers.get('etag'), path).toMatch(/^"[0-9a-z]+"$/)
      expect(res.json, path).toBeTypeOf('object')
    }
    expect((await get('/llms.txt')).headers.get('content-type')).toBe('text/plain; charset=utf-8')
    for (const path of ['/for-agents', '/agent-native/']) {
      const res = await get(path)
      expect(res.headers.get('content-type'), path).toBe('text/html; charset=utf-8')
      expect(res.headers.get('content-security-policy'), path).toContain("default-src 'none'")
      expect(res.text, path).toMatch(/^<!doctype html>/)
    }
    expect((await get('/logo.svg')).headers.get('content-type')).toBe('image/svg+xml')
  })

  it('answers 304 to a matching If-None-Match, and the whole document to a stale one', async () => {
    for (const path of [...JSON_DOCS, ...TEXT_DOCS]) {
      const first = await get(path)
      const etag = first.headers.get('etag')!
      const again = await get(path, { 'if-none-match': etag })
      expect(again.status, path).toBe(304)
      expect(again.text, path).toBe('')
      expect(again.headers.get('etag'), path).toBe(etag)
      expect((await get(path, { 'if-none-match': `"stale", W/${etag}` })).status, path).toBe(304)
      expect((await get(path, { 'if-none-match': '"stale"' })).status, path).toBe(200)
    }
  })

  it('builds every link from server.site_url and the brand from the config', async () => {
    const acp = (await get('/.well-known/acp.json')).json
    expect(acp.api_base_url).toBe('https://hosting.example.net/api/v1')
    expect(acp.checkout.create.url).toBe('https://hosting.example.net/api/v1/acp/checkouts/')
    expect(acp.test_mode).toBe(true)
    expect(acp.payment_methods[0].test_payment_method_ids).toContain('pm_card_visa')
    const card = (await get('/.well-known/mcp.json')).json
    expect(card.remotes[0]).toMatchObject({ type: 'streamable-http', url: 'https://hosting.example.net/mcp/', authentication: { schemes: ['bearer'] } })
    expect(card.remotes[0].supportedProtocolVersions).toContain('2025-06-18')
    expect(card.name).toBe('net.example.hosting/berth')
    const plugin = (await get('/.well-known/ai-plugin.json')).json
    expect(plugin).toMatchObject({ name_for_human: 'Harbour & Co', name_for_model: 'harbour_co', contact_email: 'hostmaster@hosting.example.net', api: { url: 'https://hosting.example.net/api/v1/openapi.json' } })
    // The brand is escaped in the pages, not markup.
    expect((await get('/for-agents')).text).toContain('Harbour &#38; Co')
    expect((await get('/llms.txt')).text).toMatch(/^# Harbour & Co\n/)
  })

  it("lists in the server card exactly the tools an MCP session lists, from the OpenAPI document", async () => {
    const card = (await get('/.well-known/mcp.json')).json
    const openapi = (await get('/api/v1/openapi.json')).json
    const tools = toolsFromOpenApi(openapi)
    expect(card.tools.map((t: { name: string }) => t.name)).toEqual(tools.map((t) => t.name))
    expect(card.tools.find((t: { name: string }) => t.name === 'delete_site').annotations.destructiveHint).toBe(true)
    expect(card.prompts.map((p: { name: string }) => p.name)).toEqual(['buy_a_site', 'deploy_to_site'])
  })

  it('lists every plan on sale with its SKUs and prices, and never a deprecated one', async () => {
    const plans = (await h.call('GET', '/api/v1/plans/')).json.data as { slug: string; skus: { monthly: string; annual: string }; price: { monthly: number }; features: Record<string, unknown> }[]
    const pricing = (await get('/api/pricing.json')).json
    expect(pricing.plans.map((p: { slug: string }) => p.slug)).toEqual(plans.map((p) => p.slug))
    const acp = (await get('/.well-known/acp.json')).json
    expect(acp.products.map((p: { sku: string }) => p.sku).sort()).toEqual(plans.flatMap((p) => [p.skus.monthly, p.skus.annual]).sort())
    const starter = pricing.plans.find((p: { slug: string }) => p.slug === 'starter')
    // The features are the plan view's, AI token allowance included.
    for (const p of pricing.plans) expect(p.features, p.slug).toEqual(plans.find((q) => q.slug === p.slug)!.features)
    expect(starter.features.ai_tokens_monthly).toBe(0)
    expect(starter.prices).toEqual([
      { sku: 'svc_starter_monthly', period: 'monthly', amount: 7, amount_cents: 700, currency: 'CAD' },
      { sku: 'svc_starter_annual', period: 'annual', amount: 70, amount_cents: 7000, currency: 'CAD' },
    ])
    for (const path of ['/api/pricing.json', '/.well-known/acp.json', '/llms.txt', '/for-agents', '/agent-native/']) expect((await get(path)).text, path).not.toContain('legacy-basic')
  })

  it('shows a plan added to the catalog in every document at once, with new ETags, and escapes its name', async () => {
    const paths = ['/api/pricing.json', '/.well-known/acp.json', '/llms.txt', '/for-agents', '/agent-native/']
    const before = new Map<string, string>()
    for (const path of paths) before.set(path, (await get(path)).headers.get('etag')!)
    h.services.plans.add({
      slug: 'harbour-xl', name: 'XL <b>*Harbour*</b>', track: 'single_site', hosting_type: 'vps', price_monthly: 12.5,
      max_sites: 1, ai_modules: ['chatbot'], free_domain_annual: false, memory_mb: 2048, cpu_cores: 2, disk_gb: 40, ai_tokens_monthly: 250_000,
    })
    for (const path of paths) {
      const res = await get(path, { 'if-none-match': before.get(path)! })
      expect(res.status, path).toBe(200)
      expect(res.headers.get('etag'), path).not.toBe(before.get(path))
      expect(res.text, path).toContain('svc_harbour-xl_monthly')
      // Markup only where it would be read as markup: JSON carries the name as it is.
      if (!path.endsWith('.json')) expect(res.text, path).not.toContain('<b>')
      else expect(JSON.stringify(res.json)).toContain('XL <b>*Harbour*</b>')
    }
    expect((await get('/agent-native/')).text).toContain('XL &#60;b&#62;*Harbour*&#60;/b&#62;')
    expect((await get('/llms.txt')).text).toContain('XL \\<b\\>\\*Harbour\\*\\</b\\>')
    const pricing = (await get('/api/pricing.json')).json
    const xl = pricing.plans.find((p: { slug: string }) => p.slug === 'harbour-xl')
    expect(xl.prices[1]).toMatchObject({ amount: 125, amount_cents: 12500 })
    expect(xl.features).toMatchObject({ ai_modules: ['chatbot'], ai_tokens_monthly: 250_000 })
    h.services.plans.setDeprecated('harbour-xl', true)
    for (const path of paths) expect((await get(path)).text, path).not.toContain('harbour-xl')
  })

  it('links llms.txt to the documents, in the llmstxt.org shape', async () => {
    const text = (await get('/llms.txt')).text
    expect(text).toMatch(/^# .+\n\n> .+\n/)
    const sections = [...text.matchAll(/^## (.+)$/gm)].map((m) => m[1])
    expect(sections).toEqual(['Plans', 'Docs', 'Optional'])
    const links = [...text.matchAll(/\]\((https:\/\/hosting\.example\.net[^)]*)\)/g)].map((m) => m[1])
    expect(links).toEqual(expect.arrayContaining(['https://hosting.example.net/api/v1/openapi.json', 'https://hosting.example.net/.well-known/mcp.json', 'https://hosting.example.net/for-agents']))
  })
})
