import { Database } from 'bun:sqlite'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { api, freePort, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug } from './helpers/purchase'
import { ClockedBerths } from './helpers/clocked'

/**
 * Money for domains on the compiled binary, killed with SIGKILL between the processor's charge
 * and Berth's record of it (issue 22, part 3). `dev.payment_delay_ms` makes the built-in
 * processor wait 2 s before and after it records a charge in its ledger (the `local_charges`
 * table); the test kills Berth while a domain's charge is in the ledger and its payment is still
 * pending, restarts it, and checks that every charge the processor made is one recorded payment,
 * charged once, with the domain registered (or renewed) or the charge refunded.
 */
const DAY_MS = 86_400_000
const CONTACT = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+1.5555551234', address1: '100 King St W', city: 'Toronto', state: 'ON', postal_code: 'M5X 1A9', country: 'CA' }
const ENV = { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour' }
const SLOW_PROCESSOR = { BERTH_DEV_PAYMENT_DELAY_MS: '2000' }

const dirs: string[] = []
afterAll(async () => {
  await clocked.stopAll()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
}, 120_000)

const clocked = new ClockedBerths(ENV)
/** Starts the binary on `dataDir`/`port` with the clock `offsetMs` ahead. */
const at = (offsetMs: number, dataDir: string, port: number, env: Record<string, string> = {}) => clocked.at(offsetMs / 1000, dataDir, port, env)

async function eventually<T>(fn: () => T | Promise<T>, check: (v: T) => boolean, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await fn()
    if (check(v)) return v
    if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`)
    await Bun.sleep(50)
  }
}

interface Charge { key: string; ref: string; amount: number }
interface Payment { key: string; status: string; ref: string; amount: number; refund: string | null }

/** What the processor charged (its ledger) and what Berth recorded, for keys starting with `prefix`. */
function money(dataDir: string, prefix: string): { charges: Charge[]; payments: Payment[] } {
  const db = new Database(join(dataDir, 'berth.db'), { readonly: true })
  try {
    const like = `${prefix}%`
    return {
      charges: db.query("SELECT idempotency_key AS key, payment_ref AS ref, amount_cents AS amount FROM local_charges WHERE idempotency_key LIKE ? AND payment_ref != '' ORDER BY key").all(like) as Charge[],
      payments: db.query('SELECT idempotency_key AS key, status, processor_ref AS ref, amount_cents AS amount, refund_ref AS refund FROM payments WHERE idempotency_key LIKE ? ORDER BY key').all(like) as Payment[],
    }
  } finally {
    db.close()
  }
}

/** Every charge the processor made is exactly one payment Berth recorded, with the processor's reference. */
function expectEveryChargeRecordedOnce(m: { charges: Charge[]; payments: Payment[] }) {
  for (const c of m.charges) {
    const recorded = m.payments.filter((p) => p.key === c.key)
    expect(recorded, c.key).toHaveLength(1)
    expect(recorded[0]).toMatchObject({ ref: c.ref, amount: c.amount })
    expect(['succeeded', 'refunded']).toContain(recorded[0]!.status)
  }
  expect(new Set(m.charges.map((c) => c.key)).size).toBe(m.charges.length)
}

const sandboxDomains = (dataDir: string) => JSON.parse(readFileSync(join(dataDir, 'sandbox-registrar.json'), 'utf8')) as Record<string, { expiresAt: number }>

describe('domain money and kill -9', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'berth-domain-kill-'))
  dirs.push(dataDir)
  const name = `${uniqueSlug('paid')}.com`
  const refused = `funds-${uniqueSlug('dry')}.com`
  let port = 0
  let key = ''

  it('a registration killed after the processor charged: after the restart it is recorded once and registered, or refunded', async () => {
    port = await freePort()
    let b = await at(0, dataDir, port, SLOW_PROCESSOR)
    key = (await buyDirect(b.url, { slug: uniqueSlug('dk'), sku: 'svc_starter_annual' })).data.api_key as string
    const reg = await api(b.url, 'POST', '/domains/register/', { key, body: { domain: name, period: 1, contact: CONTACT } })
    expect(reg.status, reg.text).toBe(201)
    // The answer does not wait for the processor (2 s + 2 s here) or the registrar.
    expect(reg.json.data).toMatchObject({ domain: name, status: 'pending', expires_at: null, error: null })
    const price = Math.round(reg.json.data.charged * 100)
    expect(price).toBeGreaterThan(0)
    // The sandbox refuses funds-* names at registration: that charge must come back.
    expect((await api(b.url, 'POST', '/domains/register/', { key, body: { domain: refused, period: 1, contact: CONTACT } })).status).toBe(201)
    expect((await api(b.url, 'GET', `/domains/${name}/`, { key })).json.data.status).toBe('pending')

    const inWindow = (m: ReturnType<typeof money>) => m.charges.length === 2 && m.payments.length === 2 && m.payments.every((p) => p.status === 'pending')
    await eventually(() => money(dataDir, 'domain-register:'), inWindow, 'both registrations charged by the processor, not yet recorded')
    await b.kill9()

    b = await at(0, dataDir, port)
    const domains = await eventually(async () => (await api(b.url, 'GET', '/domains/', { key })).json.data as { domain: string; status: string; error: string | null; expires_at: string | null }[],
      (list) => list.length === 2 && list.every((d) => d.status !== 'pending'), 'registrations finished after the restart')
    const paid = domains.find((d) => d.domain === name)!
    expect(paid).toMatchObject({ status: 'active', error: null })
    expect(Date.parse(paid.expires_at!)).toBe(sandboxDomains(dataDir)[name]!.expiresAt)
    const failed = domains.find((d) => d.domain === refused)!
    expect(failed).toMatchObject({ status: 'failed', expires_at: null })
    expect(failed.error).toMatch(/refunded/)
    expect(sandboxDomains(dataDir)[refused]).toBeUndefined()

    await Bun.sleep(1500) // a second run of the job, if there were one, would charge again now
    const m = money(dataDir, 'domain-register:')
    expect(m.charges).toHaveLength(2)
    expectEveryChargeRecordedOnce(m)
    expect(m.payments.map((p) => [p.key.split(':')[1], p.status, p.amount])).toEqual(
      [[name, 'succeeded', price], [refused, 'refunded', expect.any(Number)]].sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
    )
    expect(m.payments.find((p) => p.status === 'refunded')!.refund).toMatch(/^re_test_/)
    await b.stop()
  }, 180_000)

  it('a renewal killed after the processor charged: after the restart it is recorded once and the domain renewed once', async () => {
    const expiry = sandboxDomains(dataDir)[name]!.expiresAt
    // 29 days before expiry: inside the 30 days ahead in which auto-renew renews.
    const offset = expiry - 29 * DAY_MS - Date.now()
    let b = await at(offset, dataDir, port, SLOW_PROCESSOR)
    const inWindow = (m: ReturnType<typeof money>) => m.charges.length === 1 && m.payments.length === 1 && m.payments[0]!.status === 'pending'
    await eventually(() => money(dataDir, 'domain-renew:'), inWindow, 'the renewal charged by the processor, not yet recorded')
    await b.kill9()
    expect(sandboxDomains(dataDir)[name]!.expiresAt).toBe(expiry)

    b = await at(offset, dataDir, port)
    const renewed = await eventually(async () => (await api(b.url, 'GET', `/domains/${name}/`, { key })).json.data,
      (d) => Date.parse(d.expires_at) > expiry, 'renewal after the restart')
    const added = Date.parse(renewed.expires_at) - expiry
    expect(added).toBeGreaterThanOrEqual(365 * DAY_MS)
    expect(added).toBeLessThanOrEqual(366 * DAY_MS)
    expect(renewed.renew_error).toBeNull()
    expect(sandboxDomains(dataDir)[name]!.expiresAt).toBe(Date.parse(renewed.expires_at))

    await Bun.sleep(1500)
    const m = money(dataDir, 'domain-renew:')
    expect(m.charges).toHaveLength(1)
    expectEveryChargeRecordedOnce(m)
    expect(m.payments).toMatchObject([{ key: `domain-renew:${name}:${expiry}`, status: 'succeeded', amount: Math.round(renewed.renewal_price * 100) }])
    // Listed among the account's payments, as an agent sees them.
    const listed = (await api(b.url, 'GET', '/account/payments/', { key })).json.data as { kind: string; status: string; description: string }[]
    expect(listed.filter((p) => p.kind === 'domain').map((p) => p.status).sort()).toEqual(['refunded', 'succeeded', 'succeeded'])
    await b.stop()
  }, 180_000)
})
