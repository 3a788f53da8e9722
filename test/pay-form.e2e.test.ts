import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { readyCheckout, uniqueSlug } from './helpers/purchase'
import { instanceOf, removeInstanceSites } from './helpers/sites'

/**
 * The built-in processor's hosted payment page works without JavaScript: its form posts (never a
 * GET with the card in the URL), with a CSRF token, and pays; in Chromium with scripts off, and
 * with them on.
 */
let berth: Berth
let browser: Browser
const CARD = '4242424242424242'

beforeAll(async () => {
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' } })
  instanceOf(berth)
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await berth?.dispose()
  await removeInstanceSites(berth)
})

/** A checkout waiting on the hosted page: its id, secret and page URL. */
async function awaitingPayment() {
  const { id, secret } = await readyCheckout(berth.url, { slug: uniqueSlug('payform') })
  const done = await api(berth.url, 'POST', `/acp/checkouts/${id}/complete/?checkout_secret=${secret}`, { body: {} })
  expect(done.json.data.status).toBe('awaiting_payment')
  return { id, secret, url: done.json.data.processor_checkout_url as string }
}
const statusOf = async (c: { id: string; secret: string }) => (await api(berth.url, 'GET', `/acp/checkouts/${c.id}/`, { headers: { 'x-checkout-secret': c.secret } })).json.data.status

/** The page's form as a plain HTML client sees it: method, action, and every input's name and value. */
function formOf(html: string) {
  const form = /<form\b([^>]*)>([\s\S]*?)<\/form>/.exec(html)
  if (!form) throw new Error('no form on the page')
  const attr = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1]
  const inputs = [...form[2]!.matchAll(/<input\b[^>]*>/g)].map((m) => ({ name: attr(m[0], 'name'), value: attr(m[0], 'value') ?? '' }))
  return { method: attr(form[1]!, 'method'), action: attr(form[1]!, 'action'), inputs }
}

describe('the hosted payment page without scripts', () => {
  it('posts its own form, url-encoded with a CSRF token, and pays; a wrong token charges nothing', async () => {
    const c = await awaitingPayment()
    const page = await fetch(c.url)
    const cookie = page.headers.get('set-cookie')!.split(';')[0]!
    const form = formOf(await page.text())
    expect(form.method).toBe('post')
    expect(form.action).toBe(new URL(c.url).pathname)
    const fields = new URLSearchParams(form.inputs.filter((i) => i.name).map((i) => [i.name!, i.value]))
    expect(fields.get('csrf')).toMatch(/^[0-9a-f]{48}$/)
    fields.set('card', CARD)
    fields.set('exp', '12/34')
    fields.set('cvc', '123')
    const target = new URL(form.action!, c.url).toString()
    const post = (body: URLSearchParams, cookieHeader = cookie) =>
      fetch(target, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader }, body })

    const forged = new URLSearchParams(fields)
    forged.set('csrf', 'f'.repeat(48))
    const refused = await post(forged)
    expect(refused.status).toBe(403)
    expect(await refused.text()).toContain('Nothing was charged')
    expect((await post(fields, '')).status).toBe(403)
    expect(await statusOf(c)).toBe('awaiting_payment')

    const declined = new URLSearchParams(fields)
    declined.set('card', '4000000000000002')
    const answer = await post(declined)
    expect(answer.status).toBe(402)
    expect(await answer.text()).toContain('declined')
    expect(await statusOf(c)).toBe('awaiting_payment')

    const paid = await post(fields)
    expect(paid.status).toBe(303)
    expect(paid.headers.get('location')).toBe(new URL(c.url).pathname)
    expect(await (await fetch(new URL(paid.headers.get('location')!, c.url))).text()).toContain('Payment received')
    expect(await statusOf(c)).toBe('completed')
  })

  it.each([['off', false], ['on', true]] as const)('pays in Chromium with JavaScript %s, and no request carries the card number in its URL', async (_label, javaScriptEnabled) => {
    const c = await awaitingPayment()
    const context = await browser.newContext({ javaScriptEnabled })
    const urls: string[] = []
    context.on('request', (r) => urls.push(r.url()))
    try {
      const page = await context.newPage()
      await page.goto(c.url)
      await page.fill('#card', '4242 4242 4242 4242')
      await page.fill('#exp', '12/34')
      await page.fill('#cvc', '123')
      await page.click('#submit')
      await page.waitForSelector('[data-testid=paid]')
    } finally {
      await context.close()
    }
    expect(await statusOf(c)).toBe('completed')
    expect(urls.length).toBeGreaterThan(1)
    for (const url of urls) expect(url.replace(/%20|\+/g, ' ')).not.toMatch(/4242 ?4242 ?4242 ?4242|cvc=|card=/)
  }, 60_000)
})
