import { describe, expect, it } from 'vitest'
import { domainStore, testProcessor } from '../../../test/helpers/domain-store'
import { APPLY_JOBS, DELETION_GRACE_MS, subscribedSites } from '../../../test/helpers/subscribed-sites'
import { DomainError } from '../errors'
import { PERIOD_MS } from '../../core/money'
import { Charges } from './charges'
import { BillingRepository } from './repository'
import { RETRY_AFTER_MS, SUSPEND_AFTER_MS, SubscriptionBilling } from './subscriptions'

/**
 * Money after the purchase, on a real SQLite store (migrations applied) and the built-in test
 * processor: renewals at the period end, credits, declines retried after 1, 3 and 5 days, sites
 * suspended after 7 days unpaid and brought back when paid, cancellation at period end, and
 * prorated plan changes. The sites answer billing's events as compose/money.ts wires them
 * (test/helpers/subscribed-sites.ts); the runner and job queue are doubles that record what they are asked.
 */
const DAY = 86_400_000
const MONTH = PERIOD_MS.monthly
function setup() {
  const t = domainStore()
  const pay = testProcessor(t)
  const repo = new BillingRepository(t.store)
  const { sites, events, stopped, enqueued, kicks } = subscribedSites(t)
  const charges = new Charges({ store: t.store, clock: t.clock, log: t.log, repo, processor: pay.processor })
  const billing = new SubscriptionBilling({ store: t.store, clock: t.clock, log: t.log, repo, accounts: t.accounts, sites, plans: t.plans, charges, events })
  /** A paid-up monthly Starter (7.00 CAD) with one active site; its period ends in 30 days. */
  function subscribe(o: { method?: string | null; plan?: string; amountCents?: number; slugs?: string[] } = {}) {
    const accountId = t.account(o.method === undefined ? 'pm_card_visa' : o.method)
    const now = t.clock.now()
    const sub = repo.insertSubscription({
      id: crypto.randomUUID(), accountId, planSlug: o.plan ?? 'starter', billingPeriod: 'monthly', status: 'active',
      currentPeriodEnd: now + MONTH, amountCents: o.amountCents ?? 700, processor: 'local', createdAt: now, updatedAt: now,
    })
    const siteIds = (o.slugs ?? [`s${Math.random().toString(36).slice(2, 8)}`]).map((slug) => {
      const site = sites.insert({ id: crypto.randomUUID(), accountId, subscriptionId: sub.id, slug, planSlug: sub.planSlug, createdAt: now })
      sites.setStatus(site.id, 'active', now)
      return site.id
    })
    return { accountId, id: sub.id, end: sub.currentPeriodEnd, siteIds }
  }
  const sub = (id: string) => repo.findSubscriptionById(id)!
  const renewals = (id: string) => t.store.sqlite.query("SELECT * FROM payments WHERE subscription_id = ? AND kind = 'renewal' ORDER BY created_at").all(id) as
    { status: string; amount_cents: number; idempotency_key: string; period_start: number; period_end: number; description: string }[]
  const siteStatus = (id: string) => sites.find(id)!.status
  return { ...t, ...pay, repo, sites, charges, billing, stopped, enqueued, kicks, subscribe, sub, renewals, siteStatus }
}

describe('renewals', () => {
  it('charges nothing before the period end, then charges the period once, however many passes run', async () => {
    const t = setup()
    const s = t.subscribe({ slugs: ['acme'] })
    t.clock.set(s.end - 1)
    await t.billing.runDue()
    expect(t.charged).toHaveLength(0)
    t.clock.set(s.end)
    await t.billing.runDue()
    await t.billing.runDue()
    expect(t.charged).toHaveLength(1)
    expect(t.charged[0]).toMatchObject({ amountCents: 700, paymentMethodId: 'pm_card_visa', offSession: true, idempotencyKey: `renewal:${s.id}:${s.end}:0` })
    const [payment] = t.renewals(s.id)
    expect(payment).toMatchObject({ status: 'succeeded', amount_cents: 700, period_start: s.end, period_end: s.end + MONTH })
    expect(payment!.description).toBe(`Starter (monthly), 2026-12-01 to 2026-12-31, sites acme`)
    expect(t.sub(s.id)).toMatchObject({ status: 'active', currentPeriodStart: s.end, currentPeriodEnd: s.end + MONTH, nextChargeAt: s.end + MONTH, failedCharges: 0 })
    expect(t.billing.view(t.sub(s.id))).toMatchObject({ amount: 7, currency: 'CAD', next_charge_at: new Date(s.end + MONTH).toISOString() })
  })

  it('takes a credit off the renewal and keeps what is left of it; a credit covering it all charges no card', async () => {
    const t = setup()
    const part = t.subscribe()
    t.repo.updateSubscription(part.id, { creditCents: 250 })
    const whole = t.subscribe()
    t.repo.updateSubscription(whole.id, { creditCents: 1000 })
    t.clock.set(part.end)
    await t.billing.runDue()
    expect(t.renewals(part.id)[0]).toMatchObject({ status: 'succeeded', amount_cents: 450 })
    expect(t.renewals(part.id)[0]!.description).toContain('2.50 CAD credit applied')
    expect(t.sub(part.id).creditCents).toBe(0)
    expect(t.renewals(whole.id)[0]).toMatchObject({ status: 'succeeded', amount_cents: 0 })
    expect(t.sub(whole.id).creditCents).toBe(300)
    expect(t.charged.map((c) => c.amountCents)).toEqual([450])
  })

  it('a processor that cannot be reached postpones the charge: pending, retried with the same key on the next pass', async () => {
    const t = setup()
    const s = t.subscribe()
    t.clock.set(s.end)
    t.setReachable(false)
    await t.billing.runDue()
    expect(t.renewals(s.id)).toMatchObject([{ status: 'pending' }])
    expect(t.sub(s.id)).toMatchObject({ status: 'active', currentPeriodEnd: s.end, failedCharges: 0 })
    expect(t.logged('renewal charge postponed: the payment processor cannot be reached')).toBe(true)
    t.setReachable(true)
    t.clock.advance(30_000)
    await t.billing.runDue()
    expect(t.renewals(s.id)).toMatchObject([{ status: 'succeeded', idempotency_key: `renewal:${s.id}:${s.end}:0` }])
    expect(t.sub(s.id).currentPeriodEnd).toBe(s.end + MONTH)
  })
})

describe('declines, suspension and reactivation', () => {
  it('retries a declined renewal 1, 3 and 5 days after the period end, each attempt keyed apart, then stops asking', async () => {
    const t = setup()
    const s = t.subscribe({ method: 'pm_card_visa_chargeDeclined' })
    t.clock.set(s.end)
    await t.billing.runDue()
    expect(t.sub(s.id)).toMatchObject({ status: 'past_due', failedCharges: 1, unpaidSince: s.end, lastChargeError: 'The card was declined.', nextChargeAt: s.end + DAY })
    expect(t.billing.view(t.sub(s.id))).toMatchObject({ unpaid_since: new Date(s.end).toISOString(), suspends_at: new Date(s.end + SUSPEND_AFTER_MS).toISOString() })
    t.clock.set(s.end + DAY - 1)
    await t.billing.runDue()
    expect(t.charged).toHaveLength(1)
    for (const [i, after] of RETRY_AFTER_MS.entries()) {
      t.clock.set(s.end + after)
      await t.billing.runDue()
      expect(t.sub(s.id).failedCharges).toBe(i + 2)
    }
    expect(RETRY_AFTER_MS).toEqual([DAY, 3 * DAY, 5 * DAY])
    expect(t.charged.map((c) => c.idempotencyKey)).toEqual([0, 1, 2, 3].map((n) => `renewal:${s.id}:${s.end}:${n}`))
    expect(t.sub(s.id).nextChargeAt).toBeNull()
    expect(t.sub(s.id).unpaidSince).toBe(s.end)
  })

  it('suspends the active sites 7 days after the unpaid period end (not an hour before) and stops their containers', async () => {
    const t = setup()
    const s = t.subscribe({ method: 'pm_card_visa_chargeDeclined', slugs: ['one', 'two'] })
    t.sites.setStatus(s.siteIds[1]!, 'failed', t.clock.now())
    t.clock.set(s.end)
    await t.billing.runDue()
    t.clock.set(s.end + SUSPEND_AFTER_MS - 3600_000)
    await t.billing.runDue()
    expect(t.siteStatus(s.siteIds[0]!)).toBe('active')
    expect(t.stopped).toEqual([])
    t.clock.set(s.end + SUSPEND_AFTER_MS)
    await t.billing.runDue()
    expect(t.siteStatus(s.siteIds[0]!)).toBe('suspended')
    expect(t.siteStatus(s.siteIds[1]!)).toBe('failed')
    expect(t.stopped).toEqual(['one'])
    await t.billing.runDue()
    expect(t.stopped).toEqual(['one'])
  })

  it('a new payment method charges what is unpaid at once, reactivates suspended sites and queues their restore', async () => {
    const t = setup()
    const s = t.subscribe({ method: 'pm_card_visa_chargeDeclined', slugs: ['back'] })
    const other = t.subscribe()
    t.clock.set(s.end)
    await t.billing.runDue()
    t.clock.set(s.end + SUSPEND_AFTER_MS)
    await t.billing.runDue()
    expect(t.siteStatus(s.siteIds[0]!)).toBe('suspended')
    const paid = await t.billing.paymentMethodChanged(s.accountId, 'pm_card_mastercard', 'mastercard ending 4444 (test)')
    expect(paid).toEqual([s.id])
    expect(t.accounts.find(s.accountId)).toMatchObject({ paymentMethodId: 'pm_card_mastercard' })
    // The period paid is the one that went unpaid: nothing of it is skipped.
    expect(t.sub(s.id)).toMatchObject({ status: 'active', failedCharges: 0, unpaidSince: null, lastChargeError: null, currentPeriodStart: s.end, currentPeriodEnd: s.end + MONTH })
    expect(t.siteStatus(s.siteIds[0]!)).toBe('active')
    expect(t.enqueued).toEqual([[APPLY_JOBS.restore, s.siteIds[0]]])
    expect(t.kicks()).toBe(1)
    expect(t.sub(other.id).status).toBe('active')
  })

  it("records billing's suspension as billing's, and a payment does not lift a suspension the admin made", async () => {
    const t = setup()
    const s = t.subscribe({ method: 'pm_card_visa_chargeDeclined', slugs: ['unpaid', 'abusive'] })
    t.clock.set(s.end)
    await t.billing.runDue()
    t.clock.set(s.end + SUSPEND_AFTER_MS)
    await t.billing.runDue()
    expect(t.sites.find(s.siteIds[0]!)).toMatchObject({ status: 'suspended', suspendedBy: 'billing', suspendedReason: expect.stringContaining('unpaid') })
    // The admin suspends the second site on top (berth sites suspend): it is the admin's now.
    t.sites.suspend(s.siteIds[1]!, 'admin', 'phishing', t.clock.now())
    await t.billing.paymentMethodChanged(s.accountId, 'pm_card_mastercard', 'mastercard ending 4444 (test)')
    expect(t.sub(s.id).status).toBe('active')
    expect(t.sites.find(s.siteIds[0]!)).toMatchObject({ status: 'active', suspendedBy: null, suspendedReason: null })
    expect(t.sites.find(s.siteIds[1]!)).toMatchObject({ status: 'suspended', suspendedBy: 'admin', suspendedReason: 'phishing' })
    expect(t.enqueued).toEqual([[APPLY_JOBS.restore, s.siteIds[0]]])
  })

  it('the processor’s method update finds the account by customer, and ignores an unknown one', async () => {
    const t = setup()
    const s = t.subscribe({ method: 'pm_card_visa_chargeDeclined' })
    t.accounts.setPaymentMethod(s.accountId, 'pm_card_visa_chargeDeclined', 'declines', t.clock.now(), 'cus_1')
    t.clock.set(s.end)
    await t.billing.runDue()
    await t.billing.onProcessorEvent({ type: 'payment_method.updated', customerRef: 'cus_unknown', paymentMethodId: 'pm_card_visa', methodLabel: 'visa' })
    expect(t.logged('payment method update for an unknown customer')).toBe(true)
    expect(t.sub(s.id).status).toBe('past_due')
    await t.billing.onProcessorEvent({ type: 'payment_method.updated', customerRef: 'cus_1', paymentMethodId: 'pm_card_visa', methodLabel: 'visa' })
    expect(t.sub(s.id).status).toBe('active')
  })
})

describe('cancellation at period end', () => {
  it('is not charged at its end: it ends, and its sites (not one still provisioning) are scheduled for deletion', async () => {
    const t = setup()
    const s = t.subscribe({ slugs: ['bye', 'new'] })
    t.sites.setStatus(s.siteIds[1]!, 'provisioning', t.clock.now())
    const canceled = t.billing.setCancelAtPeriodEnd(s.accountId, s.id, true)
    expect(canceled.cancelAtPeriodEnd).toBe(true)
    expect(t.billing.view(canceled).next_charge_at).toBeNull()
    t.clock.set(s.end - 1)
    await t.billing.runDue()
    expect(t.sub(s.id).status).toBe('active')
    t.clock.set(s.end)
    await t.billing.runDue()
    expect(t.charged).toEqual([])
    expect(t.sub(s.id)).toMatchObject({ status: 'canceled', endedAt: s.end, nextChargeAt: null })
    expect(t.sites.find(s.siteIds[0]!)).toMatchObject({ status: 'pending_deletion', deletionScheduledFor: s.end + DELETION_GRACE_MS })
    expect(t.siteStatus(s.siteIds[1]!)).toBe('provisioning')
    expect(t.stopped).toEqual(['bye'])
  })

  it('resuming undoes it; a past-due subscription canceled ends at once; only the owner’s live subscription can be changed', async () => {
    const t = setup()
    const kept = t.subscribe()
    t.billing.setCancelAtPeriodEnd(kept.accountId, kept.id, true)
    expect(t.billing.setCancelAtPeriodEnd(kept.accountId, kept.id, false).cancelAtPeriodEnd).toBe(false)
    const unpaid = t.subscribe({ method: 'pm_card_visa_chargeDeclined' })
    t.clock.set(unpaid.end)
    await t.billing.runDue()
    t.billing.setCancelAtPeriodEnd(unpaid.accountId, unpaid.id, true)
    await t.billing.runDue()
    expect(t.sub(unpaid.id).status).toBe('canceled')
    expect(t.sub(kept.id).status).toBe('active')
    const refusal = (fn: () => unknown) => {
      try {
        fn()
      } catch (err) {
        return { kind: (err as DomainError).kind, field: (err as DomainError).field }
      }
      throw new Error('not refused')
    }
    expect(refusal(() => t.billing.setCancelAtPeriodEnd(unpaid.accountId, kept.id, true))).toEqual({ kind: 'not_found', field: 'subscription_id' })
    expect(refusal(() => t.billing.setCancelAtPeriodEnd(unpaid.accountId, unpaid.id, false))).toEqual({ kind: 'conflict', field: null })
  })
})

describe('prorated plan changes', () => {
  const refusalOf = async (p: Promise<unknown>) => {
    const err = await p.then(() => null, (e: unknown) => e)
    expect(err).toBeInstanceOf(DomainError)
    return { kind: (err as DomainError).kind, field: (err as DomainError).field, message: (err as DomainError).message }
  }

  it('an upgrade half way through pays half the difference at once, pending until the change is written', async () => {
    const t = setup()
    const s = t.subscribe()
    t.clock.set(s.end - MONTH / 2)
    const proration = await t.billing.prorate(t.sub(s.id), 2400, 'Business VPS')
    expect(proration.creditCents).toBe(0)
    expect(t.charged).toMatchObject([{ amountCents: 850, offSession: true }])
    const payment = t.repo.findPaymentById(proration.payment!.id)!
    expect(payment).toMatchObject({ status: 'pending', kind: 'proration', amountCents: 850, periodEnd: s.end })
    t.billing.settleProration(proration)
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('succeeded')
  })

  it('a downgrade is a credit for the rest of the period and charges nothing; no time left costs nothing', async () => {
    const t = setup()
    const s = t.subscribe({ plan: 'business', amountCents: 2400 })
    t.clock.set(s.end - MONTH / 4)
    expect(await t.billing.prorate(t.sub(s.id), 700, 'Starter')).toEqual({ creditCents: 425, payment: null })
    t.clock.set(s.end)
    const late = await t.billing.prorate(t.sub(s.id), 8900, 'Performance')
    expect([late.creditCents + 0, late.payment]).toEqual([0, null])
    expect(t.charged).toEqual([])
  })

  it('refuses an upgrade without a method on file or with a declined card (402 on new_plan, nothing kept), and 503 when unreachable', async () => {
    const t = setup()
    const none = t.subscribe({ method: null })
    expect(await refusalOf(t.billing.prorate(t.sub(none.id), 2400, 'Business VPS'))).toMatchObject({ kind: 'payment_declined', field: 'new_plan', message: expect.stringContaining('17.00 CAD') })
    const declined = t.subscribe({ method: 'pm_card_visa_chargeDeclined' })
    expect(await refusalOf(t.billing.prorate(t.sub(declined.id), 2400, 'Business VPS'))).toMatchObject({ kind: 'payment_declined', field: 'new_plan', message: expect.stringContaining('The card was declined.') })
    expect(t.store.sqlite.query("SELECT count(*) AS n FROM payments WHERE kind = 'proration'").get()).toEqual({ n: 0 })
    const s = t.subscribe()
    t.setReachable(false)
    expect(await refusalOf(t.billing.prorate(t.sub(s.id), 2400, 'Business VPS'))).toMatchObject({ kind: 'unavailable' })
  })

  it('gives back a proration whose change did not happen, and one left pending by a stop, once each', async () => {
    const t = setup()
    const s = t.subscribe()
    const undone = await t.billing.prorate(t.sub(s.id), 2400, 'Business VPS')
    await t.billing.refundProration(undone, 'the site could not be moved')
    expect(t.repo.findPaymentById(undone.payment!.id)).toMatchObject({ status: 'refunded', refundReason: 'the site could not be moved' })
    const interrupted = await t.billing.prorate(t.sub(s.id), 2400, 'Business VPS')
    await t.billing.resumeProration(t.repo.findPaymentById(interrupted.payment!.id)!)
    expect(t.repo.findPaymentById(interrupted.payment!.id)!.status).toBe('refunded')
    // The resumed charge was asked again with its key: the processor charged it once.
    expect(t.charged).toHaveLength(3)
    expect(t.store.sqlite.query('SELECT count(*) AS n FROM local_charges').get()).toEqual({ n: 2 })
    expect(t.refunded).toHaveLength(2)
    expect(t.sub(s.id)).toMatchObject({ planSlug: 'starter', amountCents: 700 })
  })
})
