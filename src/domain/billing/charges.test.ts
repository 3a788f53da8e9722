import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { LocalProcessor } from '../../drivers/payments/local'
import { ProcessorUnavailableError, type ChargeInput } from '../../drivers/payments/types'
import { ManualClock } from '../../lib/clock'
import { memoryLogger } from '../../lib/logger'
import { migrate } from '../../store/migrate'
import { openStore } from '../../store/store'
import { AccountsRepository } from '../accounts/repository'
import { Charges, type ChargeRequest } from './charges'
import { LocalLedgerStore } from './local-ledger-repository'
import { BillingRepository } from './repository'

/**
 * The charges service's states on a real SQLite store (migrations applied) and the built-in
 * processor with its ledger in that store: pending before the processor hears of it, settled
 * once, attempts keyed apart, refunds once, and a charge interrupted by a stop finished by the
 * start-up pass without charging twice. Only the processor's reachability is switched by the test.
 */
const dir = mkdtempSync(join(tmpdir(), 'charges-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function setup() {
  const store = openStore(join(dir, `${crypto.randomUUID()}.db`))
  migrate(store)
  const clock = new ManualClock()
  const log = memoryLogger()
  const repo = new BillingRepository(store)
  const local = new LocalProcessor({ siteUrl: 'http://localhost:8080', lookup: () => null, ledger: new LocalLedgerStore(store, clock), portal: { url: () => ({ url: '', expiresAt: 0 }) }, now: () => clock.now() })
  const sent: ChargeInput[] = []
  const refunds: string[] = []
  let reachable = true
  const processor = Object.assign(Object.create(local) as LocalProcessor, {
    async charge(input: ChargeInput) {
      sent.push(input)
      if (!reachable) throw new ProcessorUnavailableError('connection refused')
      return local.charge(input)
    },
    async refund(input: { paymentRef: string; amountCents: number; reason: string }) {
      if (!reachable) throw new ProcessorUnavailableError('connection refused')
      refunds.push(input.paymentRef)
      return local.refund(input)
    },
  })
  const accountId = new AccountsRepository(store).insert({ id: crypto.randomUUID(), email: 'ada@example.com', name: 'Agent Key', createdAt: clock.now() }).id
  const charges = new Charges({ store, clock, log, repo, processor })
  const ledger = () => store.sqlite.query('SELECT count(*) AS n FROM local_charges').get() as { n: number }
  const request = (over: Partial<ChargeRequest> = {}): ChargeRequest => ({
    key: 'domain-register:shop.com:1', kind: 'domain', accountId, amountCents: 1800, description: 'Domain shop.com, registration for 1 year', paymentMethodId: 'pm_card_visa', ...over,
  })
  return { store, clock, log, repo, processor, charges, sent, refunds, ledger, request, accountId, setReachable: (v: boolean) => (reachable = v) }
}

describe('charges', () => {
  it('records the payment pending before the processor hears of it; the same key opens the same payment', () => {
    const t = setup()
    const first = t.charges.open(t.request())
    expect(first).toMatchObject({ status: 'pending', idempotencyKey: 'domain-register:shop.com:1', paymentMethodId: 'pm_card_visa', amountCents: 1800, processorRef: '' })
    expect(t.sent).toEqual([])
    expect(t.charges.open(t.request({ amountCents: 9999 })).id).toBe(first.id)
    expect(t.store.sqlite.query('SELECT count(*) AS n FROM payments').get()).toEqual({ n: 1 })
  })

  it('charges with the payment key and settles once: succeeded with the processor reference', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    const result = await t.charges.collect(payment, { reference: 'domain:shop.com', offSession: true })
    expect(t.sent).toMatchObject([{ idempotencyKey: 'domain-register:shop.com:1', amountCents: 1800, paymentMethodId: 'pm_card_visa', offSession: true }])
    const settled = t.charges.settle(payment.id, result)
    expect(settled).toMatchObject({ status: 'succeeded', methodLabel: 'visa ending 4242 (test)' })
    expect(settled.processorRef).toMatch(/^pi_test_/)
    // A second settle (a retry that got the same answer) changes nothing.
    expect(t.charges.settle(payment.id, { ok: false, declineCode: 'card_declined', message: 'no' })).toEqual(settled)
  })

  it('a decline settles failed; the next attempt is keyed apart, and a live attempt is resumed rather than repeated', async () => {
    const t = setup()
    const base = 'domain-renew:shop.com:1767225600000'
    expect(t.charges.attemptKey(base)).toBe(base)
    const declined = t.charges.open(t.request({ key: t.charges.attemptKey(base), paymentMethodId: 'pm_card_visa_chargeDeclined' }))
    const settled = t.charges.settle(declined.id, await t.charges.collect(declined, { reference: 'x' }))
    expect(settled).toMatchObject({ status: 'failed', failureCode: 'card_declined' })
    const second = t.charges.attemptKey(base)
    expect(second).toBe(`${base}:2`)
    const retry = t.charges.open(t.request({ key: second }))
    expect(t.charges.attemptKey(base)).toBe(second)
    t.charges.settle(retry.id, await t.charges.collect(retry, { reference: 'x' }))
    expect(t.charges.attemptKey(base)).toBe(second)
    // Another domain whose name starts the same is another base.
    expect(t.charges.attemptKey('domain-renew:shop.co')).toBe('domain-renew:shop.co')
  })

  it('a stop between the processor charge and the record: the start-up pass charges again with the key, the processor charges once', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    await t.charges.collect(payment, { reference: 'domain:shop.com' })
    expect(t.ledger().n).toBe(1)
    // The process died here. A new one, with its own Charges, starts:
    const restarted = new Charges({ store: t.store, clock: t.clock, log: t.log, repo: t.repo, processor: t.processor })
    const resumed: string[] = []
    restarted.onPending('domain', async (p) => {
      resumed.push(p.id)
      restarted.settle(p.id, await restarted.collect(p, { reference: 'domain:shop.com' }))
    })
    t.clock.advance(1000)
    await restarted.resumePending(t.clock.now())
    expect(resumed).toEqual([payment.id])
    expect(t.sent).toHaveLength(2)
    expect(t.ledger().n).toBe(1)
    expect(t.sent[0]!.idempotencyKey).toBe(t.sent[1]!.idempotencyKey)
    const row = t.repo.findPaymentById(payment.id)!
    expect(row.status).toBe('succeeded')
    // Nothing pending: a second pass does nothing.
    await restarted.resumePending(t.clock.now())
    expect(resumed).toHaveLength(1)
  })

  it('leaves payments opened by this process, and kinds nobody resumes, to their owners', async () => {
    const t = setup()
    const started = t.clock.now()
    const renewal = t.charges.open(t.request({ key: 'renewal:s:1:0', kind: 'renewal' }))
    t.clock.advance(1)
    const fresh = t.charges.open(t.request({ key: 'proration:s:x', kind: 'proration' }))
    const seen: string[] = []
    t.charges.onPending('proration', async (p) => void seen.push(p.id))
    await t.charges.resumePending(started + 1)
    expect(seen).toEqual([])
    await t.charges.resumePending(t.clock.now() + 1)
    expect(seen).toEqual([fresh.id])
    expect(t.repo.findPaymentById(renewal.id)!.status).toBe('pending')
  })

  it('an unreachable processor leaves the payment pending; the resumer failing keeps it for the next start', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    t.setReachable(false)
    await expect(t.charges.collect(payment, { reference: 'x' })).rejects.toBeInstanceOf(ProcessorUnavailableError)
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('pending')
    t.charges.onPending('domain', async (p) => void t.charges.settle(p.id, await t.charges.collect(p, { reference: 'x' })))
    await t.charges.resumePending(t.clock.now() + 1)
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('pending')
    expect(t.log.lines.some((l) => l.msg === 'a payment interrupted by a stop could not be finished; it is tried again at the next start')).toBe(true)
    t.setReachable(true)
    await t.charges.resumePending(t.clock.now() + 1)
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('succeeded')
    expect(t.ledger().n).toBe(1)
  })

  it('refunds a succeeded payment once; a pending or failed one has nothing to give back', async () => {
    const t = setup()
    const payment = t.charges.open(t.request())
    expect(await t.charges.refund(payment.id, 'not delivered')).toBe(true)
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('pending')
    t.charges.settle(payment.id, await t.charges.collect(payment, { reference: 'x' }))
    t.setReachable(false)
    expect(await t.charges.refund(payment.id, 'not delivered')).toBe(false)
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('succeeded')
    expect(t.log.lines.some((l) => l.msg === 'refund failed; refund it by hand')).toBe(true)
    t.setReachable(true)
    expect(await t.charges.refund(payment.id, 'not delivered')).toBe(true)
    expect(await t.charges.refund(payment.id, 'not delivered')).toBe(true)
    expect(t.refunds).toHaveLength(1)
    expect(t.repo.findPaymentById(payment.id)).toMatchObject({ status: 'refunded', refundReason: 'not delivered' })
  })

  it('discards only a pending payment; a payment of 0 is approved without the processor', async () => {
    const t = setup()
    const declined = t.charges.open(t.request({ key: 'checkout:1:pm_card_visa_chargeDeclined', kind: 'purchase', accountId: null }))
    t.charges.discard(declined.id)
    expect(t.repo.findPaymentById(declined.id)).toBeUndefined()
    const paid = t.charges.open(t.request({ key: 'k2' }))
    t.charges.settle(paid.id, await t.charges.collect(paid, { reference: 'x' }))
    t.charges.discard(paid.id)
    expect(t.repo.findPaymentById(paid.id)!.status).toBe('succeeded')
    const credit = t.charges.open(t.request({ key: 'k3', amountCents: 0 }))
    const sentBefore = t.sent.length
    expect(await t.charges.collect(credit, { reference: 'x' })).toMatchObject({ ok: true, methodLabel: 'account credit' })
    expect(t.sent).toHaveLength(sentBefore)
  })
})
