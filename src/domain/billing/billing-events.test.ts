import { describe, expect, it } from 'vitest'
import { domainStore, testProcessor } from '../../../test/helpers/domain-store'
import { subscribedSites } from '../../../test/helpers/subscribed-sites'
import { PERIOD_MS } from '../../core/money'
import { EventLog } from '../events'
import { Charges } from './charges'
import { BillingRepository } from './repository'
import { SubscriptionBilling } from './subscriptions'

/**
 * Billing's events (issue 41), on a real SQLite store and the built-in test processor: each
 * renewal's payment and the subscription's new state are recorded with the change, in one
 * transaction; a change that is rolled back leaves no event.
 */
function setup() {
  const t = domainStore()
  const pay = testProcessor(t)
  const repo = new BillingRepository(t.store)
  const { sites, events } = subscribedSites(t)
  const log = new EventLog({ store: t.store, clock: t.clock, log: t.log })
  const charges = new Charges({ store: t.store, clock: t.clock, log: t.log, repo, processor: pay.processor, events: log })
  const billing = new SubscriptionBilling({ store: t.store, clock: t.clock, log: t.log, repo, accounts: t.accounts, sites, plans: t.plans, charges, events, eventLog: log })
  function subscribe(method = 'pm_card_visa') {
    const accountId = t.account(method)
    const now = t.clock.now()
    const sub = repo.insertSubscription({
      id: crypto.randomUUID(), accountId, planSlug: 'starter', billingPeriod: 'monthly', status: 'active',
      currentPeriodEnd: now + PERIOD_MS.monthly, amountCents: 700, processor: 'local', createdAt: now, updatedAt: now,
    })
    return { accountId, id: sub.id, end: sub.currentPeriodEnd }
  }
  const eventsOf = (accountId: string) => log.list({ accountId, limit: 100 }).map((e) => ({ type: e.type, data: JSON.parse(e.data) as Record<string, any> }))
  return { ...t, repo, charges, billing, subscribe, eventsOf, log }
}

describe('billing events', () => {
  it('a renewal that goes through: payment.succeeded then subscription.renewed, each with its view', async () => {
    const t = setup()
    const s = t.subscribe()
    t.clock.set(s.end)
    await t.billing.runDue()
    const events = t.eventsOf(s.accountId)
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded', 'subscription.renewed'])
    expect(events[0]!.data).toMatchObject({ kind: 'renewal', status: 'succeeded', amount: 7, currency: 'CAD', subscription_id: s.id, failure: null })
    expect(events[1]!.data).toMatchObject({ id: s.id, status: 'active', current_period_end: new Date(s.end + PERIOD_MS.monthly).toISOString(), unpaid_since: null })
  })

  it('a declined renewal: payment.failed and subscription.past_due once; a later declined retry adds payment.failed only', async () => {
    const t = setup()
    const s = t.subscribe('pm_card_visa_chargeDeclined')
    t.clock.set(s.end)
    await t.billing.runDue()
    const first = t.eventsOf(s.accountId)
    expect(first.map((e) => e.type)).toEqual(['payment.failed', 'subscription.past_due'])
    expect(first[0]!.data).toMatchObject({ status: 'failed', failure: 'The card was declined.', subscription_id: s.id })
    expect(first[1]!.data).toMatchObject({ status: 'past_due', last_charge_error: 'The card was declined.', unpaid_since: new Date(s.end).toISOString() })
    t.clock.set(s.end + 86_400_000)
    await t.billing.runDue()
    expect(t.eventsOf(s.accountId).map((e) => e.type)).toEqual(['payment.failed', 'subscription.past_due', 'payment.failed'])
  })

  it('a subscription ended at its period end: subscription.canceled', async () => {
    const t = setup()
    const s = t.subscribe()
    t.billing.setCancelAtPeriodEnd(s.accountId, s.id, true)
    t.clock.set(s.end)
    await t.billing.runDue()
    const events = t.eventsOf(s.accountId)
    expect(events.map((e) => e.type)).toEqual(['subscription.canceled'])
    expect(events[0]!.data).toMatchObject({ id: s.id, status: 'canceled' })
  })

  it('a settlement rolled back with its transaction leaves neither the payment settled nor an event', () => {
    const t = setup()
    const accountId = t.account('pm_card_visa')
    const payment = t.charges.open({ key: 'test:rollback', kind: 'domain', accountId, amountCents: 100, paymentMethodId: 'pm_card_visa', description: 'x' })
    expect(() => t.store.write(() => {
      t.charges.settle(payment.id, { ok: true, paymentRef: 'ref', methodLabel: 'visa', paymentMethodId: 'pm_card_visa', customerRef: null })
      throw new Error('what the payment was for could not be written')
    })).toThrow()
    expect(t.repo.findPaymentById(payment.id)!.status).toBe('pending')
    expect(t.eventsOf(accountId)).toEqual([])
  })
})
