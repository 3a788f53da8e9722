import { Database } from 'bun:sqlite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, freePort, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { ClockedBerths, DAY_S } from './helpers/clocked'

/**
 * Money after the purchase on the compiled binary and a real Docker engine (issue 13): the binary
 * is restarted on the same data folder with dev.clock_offset_seconds moved past each period end,
 * as a month going by; the renewal job runs at start. The card is replaced through the built-in
 * billing portal, in Chromium where a person (or an agent driving a browser) would.
 */
const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_CONTAINERS_RECONCILE_SECONDS: '2' }

let browser: Browser
const dirs: string[] = []
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] })
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await clocked.stopAll()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
}, 120_000)

const clocked = new ClockedBerths(ENV)
/** Starts the binary on `dataDir`/`port` with the clock `days` ahead. */
const at = (days: number, dataDir: string, port: number, env: Record<string, string> = {}) => clocked.at(days * DAY_S, dataDir, port, env)

const subscriptionOf = async (b: Berth, key: string) => {
  const res = await api(b.url, 'GET', '/account/subscriptions/', { key })
  expect(res.status).toBe(200)
  expect(res.json.data).toHaveLength(1)
  return res.json.data[0]
}

/** Polls until `check` passes (the renewal job runs half a second after start). */
async function eventually<T>(fn: () => Promise<T>, check: (v: T) => boolean, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (check(v)) return v
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`)
    await Bun.sleep(100)
  }
}

const readDb = <T>(dataDir: string, fn: (db: Database) => T): T => {
  const db = new Database(join(dataDir, 'berth.db'), { readonly: true })
  try {
    return fn(db)
  } finally {
    db.close()
  }
}

/** The billing portal page's payments, as its table lists them. */
async function portalPayments(b: Berth, key: string): Promise<{ status: string; text: string }[]> {
  const link = await api(b.url, 'GET', '/account/billing-portal/', { key })
  expect(link.status).toBe(200)
  const page = await browser.newPage()
  try {
    await page.goto(link.json.data.url)
    return await page.locator('tr[data-payment]').evaluateAll((rows) => rows.map((r) => ({ status: r.querySelector('td:nth-child(4)')!.className, text: r.textContent ?? '' })))
  } finally {
    await page.close()
  }
}

/** Replaces the card on file through the built-in billing portal, in Chromium. */
async function replaceCard(b: Berth, key: string, card: string): Promise<string> {
  const link = await api(b.url, 'GET', '/account/billing-portal/?flow=payment_method_update', { key })
  expect(link.status).toBe(200)
  expect(link.json.data).toMatchObject({ processor: 'local', test_mode: true, flow: 'payment_method_update' })
  const page = await browser.newPage()
  try {
    await page.goto(link.json.data.url)
    await page.fill('#card-number', card)
    await page.fill('#exp', '12/40')
    await page.fill('#cvc', '123')
    await Promise.all([page.waitForURL(/notice=/), page.click('#save-card')])
    return (await page.locator('[data-testid=notice]').textContent()) ?? ''
  } finally {
    await page.close()
  }
}

describe('subscriptions across period ends (clock moved, binary restarted)', () => {
  it('renews, goes past due on a declining card, suspends after 7 days, comes back when the card is replaced in the portal, and ends when canceled', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'berth-billing-'))
    dirs.push(dataDir)
    const port = await freePort()
    let b = await at(0, dataDir, port)
    const slug = uniqueSlug('renew')
    const { data } = await buyDirect(b.url, { slug, sku: 'svc_starter_monthly' })
    const key = data.api_key as string
    expect(await waitForSite(b.url, key, slug, 120_000)).toBe('active')
    expect((await api(b.url, 'POST', `/sites/${slug}/files/write/`, { key, body: { path: 'public/index.html', content: '<h1>still here</h1>' } })).status).toBe(200)
    const bought = await subscriptionOf(b, key)
    expect(bought).toMatchObject({ status: 'active', billing_period: 'monthly', currency: 'CAD', sites: [slug], cancel_at_period_end: false, payment_method: { label: 'visa ending 4242 (test)' } })
    const firstEnd = Date.parse(bought.current_period_end)
    expect(firstEnd - Date.parse(bought.current_period_start)).toBe(30 * DAY_S * 1000)
    await b.stop()

    // A month and a day later: the period is renewed and charged once.
    b = await at(31, dataDir, port)
    const renewed = await eventually(() => subscriptionOf(b, key), (s) => Date.parse(s.current_period_end) > firstEnd, 'renewal')
    expect(renewed.status).toBe('active')
    expect(Date.parse(renewed.current_period_end) - firstEnd).toBe(30 * DAY_S * 1000)
    expect(renewed.current_period_start).toBe(bought.current_period_end)
    const payments = await portalPayments(b, key)
    expect(payments).toHaveLength(2)
    expect(payments.filter((p) => p.status === 'pay-succeeded')).toHaveLength(2)
    expect(payments[0]!.text).toContain(`${renewed.current_period_start.slice(0, 10)} to ${renewed.current_period_end.slice(0, 10)}`)
    expect(payments[0]!.text).toContain(slug)
    // The same payments through the API, for agents (and with Stripe, where the portal is Stripe's).
    const listed = (await api(b.url, 'GET', '/account/payments/', { key })).json.data
    expect(listed.map((p: { kind: string; status: string }) => `${p.kind}:${p.status}`)).toEqual(['renewal:succeeded', 'purchase:succeeded'])
    expect(listed[0]).toMatchObject({ amount: bought.amount, currency: 'CAD', period_start: renewed.current_period_start, period_end: renewed.current_period_end, method: 'visa ending 4242 (test)', test_mode: true })

    // The card is switched to one that declines; the next period end goes past due.
    expect(await replaceCard(b, key, '4000 0000 0000 0002')).toContain('Card saved')
    expect((await subscriptionOf(b, key)).payment_method).toEqual({ label: 'visa ending 0002 (test)' })
    await b.stop()
    b = await at(61, dataDir, port)
    const late = await eventually(() => subscriptionOf(b, key), (s) => s.status === 'past_due', 'past due')
    expect(late.last_charge_error).toMatch(/declined/i)
    const failed = (await api(b.url, 'GET', '/account/payments/', { key })).json.data[0]
    expect(failed).toMatchObject({ kind: 'renewal', status: 'failed', period_start: renewed.current_period_end })
    expect(failed.failure).toMatch(/declined/i)
    expect(late.unpaid_since).toBe(renewed.current_period_end)
    expect(Date.parse(late.suspends_at) - Date.parse(late.unpaid_since)).toBe(7 * DAY_S * 1000)
    // Still serving while past due (within the 7 days).
    expect((await viaEdge(b.url, slug)).status).toBe(200)
    await b.stop()

    // 7 days unpaid: suspended, the edge shows the suspended page, the files are kept.
    b = await at(68, dataDir, port)
    await eventually(async () => (await api(b.url, 'GET', `/sites/${slug}/`, { key })).json.data.status, (s) => s === 'suspended', 'suspension')
    const suspended = await eventually(() => viaEdge(b.url, slug), (r) => r.status === 503, 'suspended page')
    expect(suspended.text).toContain('This site is suspended')
    const file = await api(b.url, 'GET', `/sites/${slug}/files/read/?path=public/index.html`, { key })
    expect(file.status).toBe(200)
    expect(file.json.data.content).toBe('<h1>still here</h1>')
    const declined = readDb(dataDir, (db) => db.query("SELECT count(*) AS n FROM payments WHERE kind = 'renewal' AND status = 'failed'").get() as { n: number })
    expect(declined.n).toBeGreaterThanOrEqual(2) // the period end, then the retries that were due

    // A good card through the portal: the unpaid period is charged at once, the site serves again.
    expect(await replaceCard(b, key, '4242 4242 4242 4242')).toContain('the sites are active again')
    const paid = await subscriptionOf(b, key)
    expect(paid).toMatchObject({ status: 'active', unpaid_since: null, last_charge_error: null })
    expect(paid.current_period_start).toBe(renewed.current_period_end)
    await eventually(() => viaEdge(b.url, slug), (r) => r.status === 200 && r.text.includes('still here'), 'site back after payment', 60_000)
    const periods = readDb(dataDir, (db) => db.query("SELECT period_end, count(*) AS n FROM payments WHERE kind IN ('purchase', 'renewal') AND status = 'succeeded' GROUP BY period_end").all() as { n: number }[])
    expect(periods).toHaveLength(3) // bought, renewed, and the late period: each paid once
    expect(periods.every((p) => p.n === 1)).toBe(true)

    // Canceled in the portal: at the period end the subscription ends and the site is scheduled for deletion.
    const link = await api(b.url, 'GET', '/account/billing-portal/', { key })
    const page = await browser.newPage()
    await page.goto(link.json.data.url)
    await Promise.all([page.waitForURL(/notice=canceled/), page.click(`tr[data-subscription="${paid.id}"] button`)])
    await page.close()
    expect((await subscriptionOf(b, key))).toMatchObject({ cancel_at_period_end: true, next_charge_at: null })
    await b.stop()
    b = await at(92, dataDir, port)
    const ended = await eventually(() => subscriptionOf(b, key), (s) => s.status === 'canceled', 'cancellation at period end')
    expect(ended.ended_at).not.toBeNull()
    const site = (await api(b.url, 'GET', `/sites/${slug}/`, { key })).json.data
    expect(site.status).toBe('pending_deletion')
    const charges = readDb(dataDir, (db) => db.query("SELECT count(*) AS n FROM payments WHERE status = 'succeeded'").get() as { n: number })
    expect(charges.n).toBe(3) // nothing charged for the canceled period
  }, 400_000)
})

describe('renewal and kill -9', () => {
  for (const moment of ['before the processor recorded the charge', 'after the processor recorded it, before Berth did'] as const) {
    it(`killed ${moment}: after the restart the period is charged exactly once`, async () => {
      const dataDir = mkdtempSync(join(tmpdir(), 'berth-billing-kill-'))
      dirs.push(dataDir)
      const port = await freePort()
      let b = await at(0, dataDir, port)
      const slug = uniqueSlug('kill')
      const key = (await buyDirect(b.url, { slug })).data.api_key as string
      expect(await waitForSite(b.url, key, slug, 120_000)).toBe('active')
      const bought = await subscriptionOf(b, key)
      await b.stop()

      // Each charge now takes 2 s before and 2 s after the processor records it.
      b = await at(31, dataDir, port, { BERTH_DEV_PAYMENT_DELAY_MS: '2000' })
      const state = () => readDb(dataDir, (db) => ({
        pending: (db.query("SELECT count(*) AS n FROM payments WHERE kind = 'renewal' AND status = 'pending'").get() as { n: number }).n,
        ledger: (db.query("SELECT count(*) AS n FROM local_charges WHERE idempotency_key LIKE 'renewal:%'").get() as { n: number }).n,
      }))
      const wanted = moment === 'before the processor recorded the charge' ? (s: { pending: number; ledger: number }) => s.pending === 1 && s.ledger === 0 : (s: { pending: number; ledger: number }) => s.pending === 1 && s.ledger === 1
      await eventually(async () => state(), wanted, 'the renewal in flight', 20_000)
      await b.kill9()

      b = await at(31, dataDir, port)
      const renewed = await eventually(() => subscriptionOf(b, key), (s) => s.current_period_end !== bought.current_period_end, 'renewal after restart')
      expect(Date.parse(renewed.current_period_end) - Date.parse(bought.current_period_end)).toBe(30 * DAY_S * 1000)
      // Give a second pass the chance to charge again, if it would.
      await Bun.sleep(1500)
      const after = readDb(dataDir, (db) => ({
        renewals: db.query("SELECT status, amount_cents FROM payments WHERE kind = 'renewal'").all() as { status: string; amount_cents: number }[],
        charges: (db.query("SELECT count(*) AS n FROM local_charges WHERE idempotency_key LIKE 'renewal:%'").get() as { n: number }).n,
      }))
      expect(after.renewals).toEqual([{ status: 'succeeded', amount_cents: Math.round(bought.amount * 100) }])
      expect(after.charges).toBe(1)
      expect((await subscriptionOf(b, key)).current_period_end).toBe(renewed.current_period_end)
    }, 200_000)
  }
})
