import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeOpenAi, type FakeOpenAi } from '../../../test/fakes/openai-server'
import { buyInProcess, HomeRuntime } from '../../../test/helpers/home-runtime'
import { inProcess, type InProcess } from '../../../test/helpers/in-process'

/**
 * Each site's monthly AI tokens come from its plan (`ai_tokens_monthly`, issue 14): two sites on
 * plans with different allowances, on one server with a provider (the FAKE OpenAI-compatible one
 * of test/fakes) and real home folders for the pages the content module writes.
 */
let fake: FakeOpenAi
let h: InProcess
type Site = { slug: string; key: string; siteId: string }
/** On Agency: content, 200,000 tokens a site a month. */
let agency: Site
/** On a plan the hoster added with the content module and chatbot but no tokens. */
let quiet: Site

const PAGE = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Tide tables</title></head><body><h1>Tide tables</h1></body></html>'

beforeAll(async () => {
  fake = await startFakeOpenAi({ responder: () => PAGE })
  h = inProcess({ env: { BERTH_AI_BASE_URL: fake.url, BERTH_AI_MODEL: 'm', BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' }, runtime: new HomeRuntime() })
  h.services.plans.add({
    slug: 'quiet', name: 'Quiet', track: 'single_site', hosting_type: 'shared', price_monthly: 9, max_sites: 1,
    ai_modules: ['chatbot', 'seo', 'content'], free_domain_annual: false, memory_mb: 256, cpu_cores: 1, disk_gb: 5, ai_tokens_monthly: 0,
  })
  agency = await buyInProcess(h, 'svc_agency_monthly', 'tok-agency')
  quiet = await buyInProcess(h, 'svc_quiet_monthly', 'tok-quiet')
  for (const s of [agency, quiet]) {
    const on = await h.call('POST', `/api/v1/sites/${s.slug}/modules/content/toggle/`, { key: s.key, body: { enabled: true } })
    expect(on.status, on.text).toBe(200)
  }
}, 60_000)
afterAll(async () => {
  await h?.close()
  await fake?.stop()
})

const modulesOf = async (s: Site) => {
  const res = await h.call('GET', `/api/v1/sites/${s.slug}/modules/`, { key: s.key })
  expect(res.status, res.text).toBe(200)
  return Object.fromEntries((res.json.data as { name: string }[]).map((m) => [m.name, m])) as Record<string, any>
}
const generate = (s: Site, path: string) =>
  h.call('POST', `/api/v1/sites/${s.slug}/modules/content/generate/`, { key: s.key, body: { brief: 'A page with the tide tables of the harbour.', path } })

describe("a site's AI tokens come from its plan", () => {
  it("shows each site its plan's ai_tokens_monthly", async () => {
    const [a, q] = [await modulesOf(agency), await modulesOf(quiet)]
    expect(a.content.ai_tokens).toEqual({ monthly: 200_000, used_this_month: 0 })
    expect(q.content.ai_tokens).toEqual({ monthly: 0, used_this_month: 0 })
    // No tokens is not "unavailable": the module can be on, its model calls are refused, and the
    // chatbot of such a plan answers by search without the provider.
    expect(q.content).toMatchObject({ enabled: true, available: true, uses_ai_provider: true })
    expect(q.chatbot).toMatchObject({ uses_ai_provider: false, ai_tokens: { monthly: 0, used_this_month: 0 } })
    expect(a.chatbot).toMatchObject({ uses_ai_provider: true, ai_tokens: { monthly: 200_000 } })
    expect(a.seo.ai_tokens).toBeNull()
  })

  it('refuses a model call at once with 429 on a plan with 0, without asking the provider or writing', async () => {
    fake.reset()
    const refused = await generate(quiet, 'public/tides.html')
    expect(refused.status, refused.text).toBe(429)
    expect(refused.json.error.code).toBe('RATE_LIMITED')
    expect(refused.json.error.message).toContain('ai_tokens_monthly is 0')
    const retryAfter = Number(refused.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThan(0)
    expect(retryAfter).toBeLessThanOrEqual(31 * 24 * 3600)
    expect(fake.requests).toHaveLength(0)
    expect((await h.call('GET', `/api/v1/sites/${quiet.slug}/files/read/?path=public/tides.html`, { key: quiet.key })).status).toBe(404)
  })

  it("lets the site on a plan with tokens call the model, counting only its own use", async () => {
    fake.reset()
    const made = await generate(agency, 'public/tides.html')
    expect(made.status, made.text).toBe(201)
    expect(fake.requests).toHaveLength(1)
    const used = made.json.data.tokens_used as number
    expect(used).toBeGreaterThan(0)
    expect((await modulesOf(agency)).content.ai_tokens).toEqual({ monthly: 200_000, used_this_month: used })
    expect((await modulesOf(quiet)).content.ai_tokens).toEqual({ monthly: 0, used_this_month: 0 })
  })

  it("answers the chatbot's questions by search on a plan with 0", async () => {
    const on = await h.call('POST', `/api/v1/sites/${quiet.slug}/modules/chatbot/toggle/`, { key: quiet.key, body: { enabled: true } })
    expect(on.status, on.text).toBe(200)
    const write = await h.call('POST', `/api/v1/sites/${quiet.slug}/files/write/`, { key: quiet.key, body: { path: 'public/ferry.html', content: '<html><head><title>Ferry</title></head><body><p>The ferry to the island leaves the harbour at nine every morning.</p></body></html>' } })
    expect(write.status, write.text).toBeLessThan(300)
    fake.reset()
    const answer = await h.services.chatbot.ask({ siteId: quiet.siteId, slug: quiet.slug }, 'When does the ferry leave?', 'visitor-1')
    expect(answer).toMatchObject({ mode: 'search', sources: [expect.objectContaining({ url: '/ferry.html' })] })
    expect(fake.requests).toHaveLength(0)
  })
})
