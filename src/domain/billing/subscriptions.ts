import { ProcessorUnavailableError, type ChargeResult } from '../../drivers/payments/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { AccountRow, PaymentRow, SubscriptionRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, notFound, op, paymentDeclined, say, unavailable } from '../errors'
import { formatCad, PERIOD_MS, prorate, toDollars } from '../../core/money'
import type { PlansService } from '../plans'
import type { Approved, Charges } from './charges'
import type { SubscribedSites, SubscriptionEvents, SubscriptionReaction } from './events'
import type { BillingRepository } from './repository'
import type { EventLog, EventType } from '../events'
import { paymentView, type PaymentView, type SubscriptionView } from './views'

const DAY_MS = 86_400_000
/** After a declined renewal, retries 1, 3 and 5 days after the unpaid period end (design.md). */
export const RETRY_AFTER_MS = [1 * DAY_MS, 3 * DAY_MS, 5 * DAY_MS]
/** Sites of a subscription unpaid this long are suspended. */
export const SUSPEND_AFTER_MS = 7 * DAY_MS

export interface SubscriptionBillingDeps {
  store: Store
  clock: Clock
  log: Logger
  repo: BillingRepository
  /** The accounts a subscription bills (the accounts area's repository, which billing does not import: accounts sits above billing). */
  accounts: {
    find(id: string): AccountRow | undefined
    setPaymentMethod(id: string, methodId: string, label: string, at: number, customerRef?: string | null): void
    findByCustomer(customerRef: string): AccountRow | undefined
  }
  sites: SubscribedSites
  plans: Pick<PlansService, 'get'>
  /** Where a subscription paid, lapsed or ended is told (the sites under it answer). */
  events: Pick<SubscriptionEvents, 'publish'>
  charges: Charges
  /** The event log (domain/events): `subscription.renewed`, `subscription.past_due` and `subscription.canceled`, in the change's transaction. */
  eventLog?: Pick<EventLog, 'record'>
}

/**
 * Money after the purchase (design.md): renewals charged at each period end with the method on
 * file, declines retried after 1, 3 and 5 days, sites suspended after 7 days unpaid and
 * reactivated when paid, cancellation at period end, and prorated plan changes. What the sites
 * do is their area's answer to the subscription events published here (events.ts).
 *
 * Every charge is made in three steps so that a `kill -9` at any point neither skips nor doubles
 * a period: (1) a `pending` payment row is written with the charge's idempotency key, derived
 * from the subscription, the period end it pays and the attempt number; (2) the processor is
 * asked with that key; (3) the outcome and the subscription's new period are written in one
 * transaction. After a crash the same subscription is still due with the same key, so step 2
 * returns the first outcome (the processor keeps it) and step 3 happens once.
 */
export class SubscriptionBilling {
  private running = false

  constructor(private d: SubscriptionBillingDeps) {}

  /** The account's subscriptions, newest first, with their plans and sites (read once for the whole list). */
  list(accountId: string): SubscriptionView[] {
    const account = this.d.accounts.find(accountId)
    const rows = this.d.repo.subscriptionsOf(accountId)
    const slugs = this.d.sites.slugsBySubscription(rows.map((s) => s.id))
    return rows.map((s) => this.view(s, account, slugs.get(s.id) ?? []))
  }

  /** The account's payments, newest first (receipts' data). */
  payments(accountId: string): PaymentView[] {
    return this.d.repo.paymentsOf(accountId).map(paymentView)
  }

  /** `sites`: the slugs of its live sites, when the caller read them already (a list). */
  view(s: SubscriptionRow, account?: AccountRow, sites = this.d.sites.slugsBySubscription([s.id]).get(s.id) ?? []): SubscriptionView {
    const plan = this.d.plans.get(s.planSlug)
    return {
      id: s.id,
      status: s.status,
      plan: { slug: plan.slug, name: plan.name, hosting_type: plan.hosting_type, max_sites: plan.features.max_sites, price: plan.price },
      billing_period: s.billingPeriod,
      amount: toDollars(s.amountCents),
      currency: 'CAD',
      current_period_start: iso(s.currentPeriodStart ?? s.createdAt),
      current_period_end: iso(s.currentPeriodEnd),
      cancel_at_period_end: s.cancelAtPeriodEnd,
      next_charge_at: s.nextChargeAt === null || s.cancelAtPeriodEnd ? null : iso(s.nextChargeAt),
      credit: toDollars(s.creditCents),
      unpaid_since: s.unpaidSince === null ? null : iso(s.unpaidSince),
      suspends_at: s.unpaidSince === null ? null : iso(s.unpaidSince + SUSPEND_AFTER_MS),
      last_charge_error: s.lastChargeError,
      payment_method: account?.paymentMethodLabel ? { label: account.paymentMethodLabel } : null,
      sites,
      created_at: iso(s.createdAt),
      ended_at: s.endedAt === null ? null : iso(s.endedAt),
    }
  }

  /**
   * One pass of the renewal job (maintenance, every 30 s, and at start): ends subscriptions
   * canceled at period end, charges what is due, suspends what is 7 days unpaid. Overlapping
   * calls return at once. Never throws.
   */
  async runDue(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      const now = this.d.clock.now()
      for (const s of this.d.repo.endingBy(now)) await this.guarded(s, () => this.end(s.id))
      for (const s of this.d.repo.dueForCharge(now)) await this.guarded(s, () => this.charge(s.id))
      for (const s of this.d.repo.unpaidSince(now - SUSPEND_AFTER_MS)) await this.guarded(s, () => this.suspend(s.id))
    } finally {
      this.running = false
    }
  }

  private async guarded(s: SubscriptionRow, fn: () => Promise<unknown> | unknown): Promise<void> {
    try {
      await fn()
    } catch (err) {
      this.d.log.error('subscription billing step failed; it is retried on the next pass', { subscription: s.id, error: (err as Error).message })
    }
  }

  /**
   * Charges the period that ends (or ended) at the subscription's `current_period_end`.
   * Returns true when it is paid.
   */
  private async charge(id: string): Promise<boolean> {
    const payment = this.d.store.write(() => {
      const s = this.d.repo.findSubscriptionById(id)!
      if (s.status !== 'active' && s.status !== 'past_due') return null
      if (s.nextChargeAt === null || s.nextChargeAt > this.d.clock.now() || s.cancelAtPeriodEnd) return null
      const key = `renewal:${s.id}:${s.currentPeriodEnd}:${s.failedCharges}`
      const existing = this.d.repo.paymentByKey(key)
      if (existing) return existing.status === 'pending' ? existing : null
      const plan = this.d.plans.get(s.planSlug)
      const periodEnd = s.currentPeriodEnd + PERIOD_MS[s.billingPeriod]
      const slugs = this.d.sites.listForSubscription(s.id).map((site) => site.slug)
      const amount = Math.max(0, s.amountCents - s.creditCents)
      const credit = s.amountCents - amount
      return this.d.charges.open({
        key, kind: 'renewal', accountId: s.accountId, subscriptionId: s.id, amountCents: amount, periodStart: s.currentPeriodEnd, periodEnd,
        paymentMethodId: this.d.accounts.find(s.accountId)?.paymentMethodId ?? '',
        description: `${plan.name} (${s.billingPeriod}), ${day(s.currentPeriodEnd)} to ${day(periodEnd)}${slugs.length ? `, sites ${slugs.join(', ')}` : ''}${credit > 0 ? `, ${formatCad(credit)} credit applied` : ''}`,
      })
    })
    if (!payment) return false
    const account = this.d.accounts.find(payment.accountId!)
    let result: ChargeResult
    try {
      result = await this.d.charges.collect(payment, { reference: `renewal:${id}`, customerRef: account?.processorCustomerRef, offSession: true })
    } catch (err) {
      if (err instanceof ProcessorUnavailableError) {
        this.d.log.warn('renewal charge postponed: the payment processor cannot be reached', { subscription: id, error: err.message })
        return false
      }
      throw err
    }
    return this.settle(id, payment.id, result)
  }

  /** Writes a renewal charge's outcome and the subscription's new state, in one transaction. */
  private async settle(subscriptionId: string, paymentId: string, result: ChargeResult): Promise<boolean> {
    const now = this.d.clock.now()
    let reaction: SubscriptionReaction | undefined
    const paid = this.d.store.write(() => {
      const payment = this.d.repo.findPaymentById(paymentId)!
      if (payment.status !== 'pending') return payment.status === 'succeeded'
      const s = this.d.repo.findSubscriptionById(subscriptionId)!
      this.d.charges.settle(payment.id, result)
      if (result.ok) {
        this.d.repo.updateSubscription(s.id, {
          status: 'active', currentPeriodStart: payment.periodStart, currentPeriodEnd: payment.periodEnd!, nextChargeAt: payment.periodEnd,
          failedCharges: 0, unpaidSince: null, lastChargeError: null, creditCents: Math.max(0, s.creditCents - (s.amountCents - payment.amountCents)), updatedAt: now,
        })
        this.record('subscription.renewed', s.id)
        reaction = this.d.events.publish({ type: 'subscription_paid', subscriptionId: s.id, at: now })
        return true
      }
      const unpaidSince = s.unpaidSince ?? s.currentPeriodEnd
      const failed = s.failedCharges + 1
      const retry = RETRY_AFTER_MS[failed - 1]
      this.d.repo.updateSubscription(s.id, {
        status: 'past_due', failedCharges: failed, unpaidSince, lastChargeError: result.message,
        nextChargeAt: retry === undefined ? null : Math.max(now, unpaidSince + retry), updatedAt: now,
      })
      if (s.status !== 'past_due') this.record('subscription.past_due', s.id)
      return false
    })
    const reactivated = reaction?.sites ?? []
    if (reaction) await reaction.after()
    if (paid) this.d.log.info('subscription renewed', { subscription: subscriptionId, payment: paymentId, reactivated })
    else this.d.log.warn('subscription renewal declined', { subscription: subscriptionId, payment: paymentId, reason: result.ok ? null : result.message })
    return paid
  }

  /** Stops the sites of a subscription 7 days unpaid; their files stay. */
  private async suspend(id: string): Promise<void> {
    const now = this.d.clock.now()
    const suspended = this.d.store.write(() => {
      const s = this.d.repo.findSubscriptionById(id)!
      if (s.status !== 'past_due') return null
      return this.d.events.publish({ type: 'subscription_lapsed', subscriptionId: id, at: now })
    })
    if (!suspended || suspended.sites.length === 0) return
    this.d.log.warn('sites suspended: subscription unpaid for 7 days', { subscription: id, sites: suspended.sites })
    await suspended.after()
  }

  /** A subscription canceled at period end reaches it: it ends and its sites are scheduled for deletion. */
  private async end(id: string): Promise<void> {
    const now = this.d.clock.now()
    const ended = this.d.store.write(() => {
      const s = this.d.repo.findSubscriptionById(id)!
      if ((s.status !== 'active' && s.status !== 'past_due') || !s.cancelAtPeriodEnd) return null
      if (s.status === 'active' && s.currentPeriodEnd > now) return null
      return this.endNow(s, now)
    })
    this.d.log.info('subscription ended (canceled at period end)', { subscription: id, sites: ended?.sites ?? [] })
    await ended?.after()
  }

  /**
   * Ends `s` at `now`, inside the caller's transaction; its sites are scheduled for deletion
   * (the `subscription_ended` event). The caller runs the reaction's `after` once committed.
   */
  endNow(s: SubscriptionRow, now: number): SubscriptionReaction {
    this.d.repo.updateSubscription(s.id, { status: 'canceled', endedAt: now, nextChargeAt: null, updatedAt: now })
    this.record('subscription.canceled', s.id)
    return this.d.events.publish({ type: 'subscription_ended', subscriptionId: s.id, at: now })
  }

  /** Records a subscription's event in the caller's transaction, with its view as it is now. */
  private record(type: EventType, subscriptionId: string): void {
    if (!this.d.eventLog) return
    const s = this.d.repo.findSubscriptionById(subscriptionId)!
    this.d.eventLog.record({ type, accountId: s.accountId, data: this.view(s, this.d.accounts.find(s.accountId)) })
  }

  /** Cancel at period end (the portal's Cancel), or undo it (Resume). */
  setCancelAtPeriodEnd(accountId: string, subscriptionId: string, cancel: boolean): SubscriptionRow {
    return this.d.store.write(() => {
      const s = this.d.repo.findSubscription(accountId, subscriptionId)
      if (!s) throw notFound('No such subscription.', 'subscription_id')
      if (s.status !== 'active' && s.status !== 'past_due') throw conflict(`This subscription is ${s.status}; only an active one can be ${cancel ? 'canceled' : 'resumed'}.`)
      const updated = this.d.repo.updateSubscription(s.id, { cancelAtPeriodEnd: cancel, updatedAt: this.d.clock.now() })
      this.d.log.info(cancel ? 'subscription set to cancel at period end' : 'subscription resumed', { subscription: s.id, period_end: iso(s.currentPeriodEnd) })
      return updated
    })
  }

  /**
   * A new payment method for the account (the portal's card form, or the processor's webhook):
   * kept on file, and every unpaid subscription is charged with it at once; a success
   * reactivates its sites. Returns the subscriptions that are paid now.
   */
  async paymentMethodChanged(accountId: string, methodId: string, label: string, customerRef: string | null = null): Promise<string[]> {
    const now = this.d.clock.now()
    const due = this.d.store.write(() => {
      this.d.accounts.setPaymentMethod(accountId, methodId, label, now, customerRef)
      const unpaid = this.d.repo.liveSubscriptions(accountId).filter((s) => s.status === 'past_due' && !s.cancelAtPeriodEnd)
      for (const s of unpaid) this.d.repo.updateSubscription(s.id, { nextChargeAt: now, updatedAt: now })
      return unpaid
    })
    this.d.log.info('payment method on file replaced', { account: accountId, method: label, retrying: due.map((s) => s.id) })
    const paid: string[] = []
    for (const s of due) if (await this.charge(s.id)) paid.push(s.id)
    return paid
  }

  /** The processor's news that a customer's method changed (Stripe's portal). */
  async onProcessorEvent(event: { type: string; accountId?: string | null; customerRef?: string | null; paymentMethodId?: string; methodLabel?: string }): Promise<void> {
    if (event.type !== 'payment_method.updated') return
    const account = event.accountId ? this.d.accounts.find(event.accountId) : event.customerRef ? this.d.accounts.findByCustomer(event.customerRef) : undefined
    if (!account) {
      this.d.log.warn('payment method update for an unknown customer', { customer: event.customerRef ?? null })
      return
    }
    await this.paymentMethodChanged(account.id, event.paymentMethodId!, event.methodLabel!, event.customerRef ?? null)
  }

  /**
   * What moving `subscription` to a plan costing `newAmountCents` a period costs now: an upgrade
   * pays the prorated difference for the rest of the period at once (payment_declined and nothing
   * changed on a decline); a downgrade is credited to the next renewal. An upgrade's payment is
   * left charged but pending: the plan change's transaction settles it (`settleProration`), so
   * the change and its payment are written together; a stop in between leaves it pending and
   * the start-up pass refunds it (`resumeProration`).
   */
  async prorate(s: SubscriptionRow, newAmountCents: number, label: string): Promise<Proration> {
    const now = this.d.clock.now()
    const cents = prorate(newAmountCents - s.amountCents, s.currentPeriodEnd - now, PERIOD_MS[s.billingPeriod])
    if (cents <= 0) return { creditCents: -cents, payment: null }
    const account = this.d.accounts.find(s.accountId)
    if (!account?.paymentMethodId) {
      throw paymentDeclined(say`Moving to ${label} costs ${formatCad(cents)} for the rest of this period, and no payment method is on file; add one through ${op('getBillingPortal')} and retry.`, 'new_plan')
    }
    // One plan change request is what is paid for: its own id in the key. A retry after a crash
    // is a new request (the orphan is refunded at start), never a second charge for one change.
    const payment = this.d.charges.open({
      key: `proration:${s.id}:${crypto.randomUUID()}`, kind: 'proration', accountId: s.accountId, subscriptionId: s.id, amountCents: cents,
      paymentMethodId: account.paymentMethodId, periodStart: now, periodEnd: s.currentPeriodEnd,
      description: `Change to ${label} for the rest of the period to ${day(s.currentPeriodEnd)}`,
    })
    let result: ChargeResult
    try {
      result = await this.d.charges.collect(payment, { reference: `proration:${s.id}`, customerRef: account.processorCustomerRef, offSession: true })
    } catch (err) {
      if (err instanceof ProcessorUnavailableError) throw unavailable('The payment processor cannot be reached; the plan was not changed and nothing was charged. Retry in a minute.')
      throw err
    }
    if (!result.ok) {
      this.d.charges.discard(payment.id)
      throw paymentDeclined(say`The card on file was declined (${result.message}) for ${formatCad(cents)}, the change's cost for the rest of this period; the plan was not changed. Replace the card through ${op('getBillingPortal')} and retry.`, 'new_plan')
    }
    return { creditCents: 0, payment: { id: payment.id, result } }
  }

  /** Records a proration's payment as paid, inside the plan change's transaction. */
  settleProration(p: Proration): void {
    if (p.payment) this.d.charges.settle(p.payment.id, p.payment.result)
  }

  /** Gives back a proration charged for a plan change that did not happen after all. */
  async refundProration(p: Proration, reason: string): Promise<void> {
    if (!p.payment) return
    this.d.charges.settle(p.payment.id, p.payment.result)
    await this.d.charges.refund(p.payment.id, reason)
  }

  /**
   * A proration left pending by a stop: its plan change was never written (they are written
   * together), so whatever the processor took for it is refunded.
   */
  async resumeProration(payment: PaymentRow): Promise<void> {
    const account = payment.accountId ? this.d.accounts.find(payment.accountId) : undefined
    const result = await this.d.charges.collect(payment, { reference: `proration:${payment.subscriptionId}`, customerRef: account?.processorCustomerRef, offSession: true })
    if (!result.ok) {
      this.d.charges.discard(payment.id)
      return
    }
    this.d.charges.settle(payment.id, result)
    await this.d.charges.refund(payment.id, 'the plan change was interrupted by a stop of Berth and not made')
  }
}

export interface Proration {
  creditCents: number
  /** An upgrade's payment, charged and still pending until the plan change is written. */
  payment: { id: string; result: Approved } | null
}

const day = (ms: number) => iso(ms).slice(0, 10)
