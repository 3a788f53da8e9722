import { timingSafeEqual as nodeTimingSafeEqual } from 'node:crypto'
import type { PaymentProcessor, ProcessorEvent } from '../../drivers/payments/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { JobRunner } from '../../jobs/runner'
import type { CheckoutRow, PaymentRow } from '../../store/schema'
import type { Approved, BillingRecords, Charges } from '../billing'
import type { Store } from '../../store/store'
import { conflict, invalid, notFound, op, paymentDeclined, say, unavailable } from '../errors'
import { sha256, type KeysService, type Principal } from '../keys'
import type { PlansService } from '../plans'
import type { SitesService } from '../sites'
import type { CheckoutView } from './views'
import type { CheckoutRepository } from './repository'
import type { PaymentMethodKind } from '../../core/enums'
import { PERIOD_MS, toCents } from '../../core/money'
import type { AccountRecords } from '../accounts'
import type { BoxRoom } from '../room'

const SESSION_LIFETIME_MS = 24 * 3600_000

export interface CheckoutServiceDeps {
  store: Store
  clock: Clock
  log: Logger
  /** The brand prefix of SKUs (config `brand.prefix`). */
  prefix: string
  repo: CheckoutRepository
  plans: Pick<PlansService, 'get' | 'requireActive'>
  /** The processor a purchase is paid through, its charge, and the subscription and payment it records. */
  money: {
    processor: PaymentProcessor
    charges: Pick<Charges, 'open' | 'collect' | 'settle' | 'discard' | 'refund' | 'told'>
    billing: Pick<BillingRecords, 'insertSubscription' | 'insertPayment' | 'updatePayment' | 'paymentForCheckout'>
  }
  /** The buyer's account (opened by a purchase without a key) and the first key it is given. */
  buyers: { accounts: Pick<AccountRecords, 'insert' | 'setPaymentMethod' | 'find'>; keys: Pick<KeysService, 'issue'> }
  sites: Pick<SitesService, 'slugUnavailable' | 'prepare' | 'release' | 'createRecord' | 'siteUrl'>
  jobs: Pick<JobRunner, 'kick'>
  /** The box's reserve of free space: a purchase is refused (507) under it. */
  room?: Pick<BoxRoom, 'ensureRoom'>
}

/**
 * ACP checkout sessions: the spec's state table plus design.md's rules. Every call after creation
 * proves itself with the checkout secret; a wrong one answers not_found as if the session did not exist.
 * A paid session creates, in one transaction, the account (when anonymous), subscription, payment
 * and site, and queues provisioning; the new account's key is shown exactly once.
 */
export class CheckoutService {
  constructor(private d: CheckoutServiceDeps) {}

  create(input: { sku: string }, principal: Principal | null): CheckoutView {
    const { plan, period } = this.parseSku(input.sku)
    this.d.room?.ensureRoom('new sites')
    const now = this.d.clock.now()
    const secret = `cks_${Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString('hex')}`
    const row = this.d.repo.insert({
      id: crypto.randomUUID(),
      secretHash: sha256(secret),
      sku: input.sku,
      planSlug: plan.slug,
      billingPeriod: period,
      status: 'not_ready',
      amountCents: toCents(period === 'monthly' ? plan.price.monthly : plan.price.annual),
      currency: 'CAD',
      accountId: principal?.accountId ?? null,
      anonymous: principal === null,
      buyerEmail: principal?.email ?? null,
      createdAt: now,
      updatedAt: now,
      expiresAt: now + SESSION_LIFETIME_MS,
    })
    return { ...this.view(row), checkout_secret: secret }
  }

  /** GET: the session; the first poll after a hosted payment carries the new key, once. */
  get(id: string, secret: string | undefined): CheckoutView {
    const row = this.authorize(id, secret)
    if (row.apiKeyState !== 'pending') return this.view(row)
    return this.d.store.write(() => {
      const fresh = this.d.repo.find(id)!
      if (fresh.apiKeyState !== 'pending') return this.view(fresh)
      const key = this.d.buyers.keys.issue(fresh.accountId!, 'Agent Key', ['read', 'write', 'admin'])
      const updated = this.d.repo.update(id, { apiKeyState: 'delivered', updatedAt: this.d.clock.now() })
      return { ...this.view(updated), api_key: key.api_key }
    })
  }

  update(id: string, secret: string | undefined, input: { buyer_email?: string; requested_slug?: string }): CheckoutView {
    return this.d.store.write(() => {
      const row = this.authorize(id, secret)
      if (row.status !== 'not_ready') throw this.wrongState(row, 'updated', 'not_ready')
      const changes: Partial<CheckoutRow> = { updatedAt: this.d.clock.now() }
      if (input.buyer_email !== undefined) changes.buyerEmail = input.buyer_email.toLowerCase()
      if (input.requested_slug !== undefined) {
        const problem = this.d.sites.slugUnavailable(input.requested_slug, row.id)
        if (problem) throw invalid('requested_slug', problem)
        // Setting the slug makes the site's network and home (sites.prepare) while the buyer pays.
        this.d.room?.ensureRoom('new sites')
        changes.requestedSlug = input.requested_slug
        changes.status = 'ready'
        // The site's id is fixed now, so its network and volume can be made while the buyer pays.
        changes.siteId = crypto.randomUUID()
      }
      const updated = this.d.repo.update(id, changes)
      if (changes.siteId) this.d.sites.prepare(changes.siteId, updated.requestedSlug!, updated.planSlug)
      return this.view(updated)
    })
  }

  /**
   * Pays for a ready session: with `processor_checkout` (the default) the session waits for the
   * hosted page (`awaiting_payment`, with its URL); with `processor_payment_method` the method is
   * charged at once and the session is `completed`, its site provisioning (payment_declined on a decline: the
   * session stays ready).
   */
  async complete(id: string, secret: string | undefined, input: { payment_method?: PaymentMethodKind; payment_method_id?: string }): Promise<CheckoutView> {
    const row = this.authorize(id, secret)
    if (row.status !== 'ready') throw this.wrongState(row, 'completed', 'ready')
    // Before any charge: a session opened while there was room is not paid for a site that cannot be made.
    this.d.room?.ensureRoom('new sites')
    const method = input.payment_method ?? 'processor_checkout'
    const plan = this.d.plans.get(row.planSlug)
    const description = `${plan.name} (${row.billingPeriod}) for ${row.requestedSlug}`
    if (method === 'processor_checkout') {
      const hosted = await this.guard(() => this.d.money.processor.createHostedCheckout({ reference: row.id, amountCents: row.amountCents, currency: 'cad', description, customerEmail: row.buyerEmail }))
      const updated = this.d.store.write(() => {
        const fresh = this.d.repo.find(id)!
        if (fresh.status !== 'ready') throw this.wrongState(fresh, 'completed', 'ready')
        return this.d.repo.update(id, { status: 'awaiting_payment', paymentMethod: method, processorSessionRef: hosted.sessionRef, processorCheckoutUrl: hosted.url, updatedAt: this.d.clock.now() })
      })
      return this.view(updated)
    }
    if (!input.payment_method_id) throw invalid('payment_method_id', `payment_method_id is required with processor_payment_method${this.d.money.processor.testMode ? ' (test mode: pm_card_visa pays)' : ''}.`)
    const account = row.accountId ? this.d.buyers.accounts.find(row.accountId) : undefined
    // The key names the session and the method: the same card sent twice is one charge, and a
    // payment left pending by a stop is found again (by this retry or the start-up pass).
    const payment = this.d.money.charges.open({
      key: `checkout:${row.id}:${input.payment_method_id}`, kind: 'purchase', accountId: row.accountId, checkoutId: row.id, amountCents: row.amountCents,
      paymentMethodId: input.payment_method_id, description,
    })
    if (payment.status !== 'pending') throw conflict(`This session's payment with ${input.payment_method_id} was ${payment.status}; pay with another payment method.`, 'payment_method_id')
    const charge = await this.guard(() => this.d.money.charges.collect(payment, { reference: row.id, customerRef: account?.processorCustomerRef ?? null, customerEmail: account?.email ?? row.buyerEmail }))
    if (!charge.ok) {
      // Nothing was charged and the buyer is here to try another method: no payment to keep.
      this.d.money.charges.discard(payment.id)
      throw paymentDeclined(`${charge.message} The session is still ready: try another payment method.`)
    }
    const { session, apiKey, used } = this.fulfil(row.id, { paymentId: payment.id, paymentRef: charge.paymentRef, methodLabel: charge.methodLabel, method, methodId: charge.paymentMethodId, customerRef: charge.customerRef, description })
    if (!used) await this.giveBack(row.id, payment.id, charge, 'the session was already completed by another payment')
    return apiKey ? { ...this.view(session), api_key: apiKey } : this.view(session)
  }

  /**
   * A direct payment left pending by a stop (the charge may have been made, the session not
   * completed): charged again with its key (the processor returns the first outcome), then the
   * session is completed as a hosted payment is (a new account's key shows on the next poll), or
   * the payment is refunded when the session cannot be completed any more (canceled, expired or
   * paid another way). Registered with the charges service's start-up pass.
   */
  async resumePurchase(payment: PaymentRow): Promise<void> {
    const row = payment.checkoutId ? this.d.repo.find(payment.checkoutId) : undefined
    const account = row?.accountId ? this.d.buyers.accounts.find(row.accountId) : undefined
    const charge = await this.d.money.charges.collect(payment, { reference: payment.checkoutId ?? payment.id, customerRef: account?.processorCustomerRef ?? null, customerEmail: account?.email ?? row?.buyerEmail ?? null })
    if (!charge.ok) return this.d.money.charges.discard(payment.id)
    if (row && row.status === 'ready' && row.expiresAt > this.d.clock.now()) {
      const plan = this.d.plans.get(row.planSlug)
      const { used } = this.fulfil(row.id, {
        paymentId: payment.id, paymentRef: charge.paymentRef, methodLabel: charge.methodLabel, method: 'processor_payment_method', methodId: charge.paymentMethodId,
        customerRef: charge.customerRef, description: `${plan.name} (${row.billingPeriod}) for ${row.requestedSlug}`, keyOnNextPoll: true,
      })
      if (used) {
        this.d.log.warn('a direct payment interrupted by a stop completed its checkout', { session: row.id, payment: payment.id })
        return
      }
    }
    await this.giveBack(payment.checkoutId ?? '', payment.id, charge, 'the checkout could not be completed after Berth stopped during its payment')
  }

  /** Refunds a charge that did not pay for its session (unless it is the one that did). */
  private async giveBack(sessionId: string, paymentId: string, charge: Approved, reason: string): Promise<void> {
    if (this.d.money.billing.paymentForCheckout(sessionId)?.id === paymentId) return
    this.d.money.charges.settle(paymentId, charge)
    await this.d.money.charges.refund(paymentId, reason)
  }

  cancel(id: string, secret: string | undefined): CheckoutView {
    return this.d.store.write(() => {
      const row = this.authorize(id, secret)
      if (!['not_ready', 'ready', 'awaiting_payment'].includes(row.status)) throw this.wrongState(row, 'canceled', 'not_ready, ready or awaiting_payment')
      const canceled = this.d.repo.update(id, { status: 'canceled', updatedAt: this.d.clock.now() })
      if (row.requestedSlug && row.status !== 'not_ready') this.d.sites.release(row.requestedSlug)
      return this.view(canceled)
    })
  }

  /** Cancels unpaid sessions older than 24 h; run by the maintenance loop. */
  expireOld(): number {
    const expired = this.d.repo.expired(this.d.clock.now())
    for (const row of expired) {
      this.d.repo.update(row.id, { status: 'canceled', error: 'Expired 24 h after creation without payment.', updatedAt: this.d.clock.now() })
      if (row.requestedSlug && row.status !== 'not_ready') this.d.sites.release(row.requestedSlug)
    }
    return expired.length
  }

  /**
   * Acts on the processor's news of a hosted payment (wired in the composition root): processing,
   * then paid (the session is fulfilled). Idempotent: a repeated event changes nothing.
   */
  async onProcessorEvent(event: ProcessorEvent): Promise<void> {
    if (event.type === 'payment_method.updated') return
    const row = this.d.repo.findByProcessorRef(event.sessionRef)
    if (!row || row.id !== event.reference) {
      this.d.log.warn('processor event for an unknown session', { session: event.sessionRef })
      return
    }
    if (event.type === 'checkout.processing') {
      this.d.store.write(() => {
        if (this.d.repo.find(row.id)!.status === 'awaiting_payment') this.d.repo.update(row.id, { status: 'in_progress', updatedAt: this.d.clock.now() })
      })
      return
    }
    if (event.type === 'checkout.expired') {
      this.d.store.write(() => {
        const fresh = this.d.repo.find(row.id)!
        if (fresh.status !== 'awaiting_payment' && fresh.status !== 'in_progress') return
        this.d.repo.update(row.id, { status: 'canceled', error: 'The payment page expired or the payment failed; start a new checkout.', updatedAt: this.d.clock.now() })
        if (fresh.requestedSlug) this.d.sites.release(fresh.requestedSlug)
      })
      return
    }
    if (event.amountCents !== row.amountCents) this.d.log.error('paid amount differs from the session', { session: row.id, paid: event.amountCents, expected: row.amountCents })
    const plan = this.d.plans.get(row.planSlug)
    this.fulfil(row.id, {
      paymentRef: event.paymentRef, methodLabel: event.methodLabel, method: 'processor_checkout', methodId: event.paymentMethodId, customerRef: event.customerRef ?? null,
      description: `${plan.name} (${row.billingPeriod}) for ${row.requestedSlug}`,
    })
  }

  /**
   * The paid session becomes real, all in one transaction: account (anonymous buyers), key,
   * subscription, payment, site, provisioning job. Idempotent: a completed session is returned
   * as it is.
   */
  private fulfil(id: string, payment: FulfilPayment): { session: CheckoutRow; apiKey: string | null; used: boolean } {
    const result = this.d.store.write(() => {
      const row = this.d.repo.find(id)!
      if (row.status === 'completed') return { session: row, apiKey: null, used: false }
      const now = this.d.clock.now()
      const accountId = row.accountId ?? this.d.buyers.accounts.insert({ id: crypto.randomUUID(), email: row.buyerEmail, name: 'Agent Key', createdAt: now }).id
      const period = row.billingPeriod
      const subscription = this.d.money.billing.insertSubscription({
        id: crypto.randomUUID(), accountId, planSlug: row.planSlug, billingPeriod: period, status: 'active',
        currentPeriodEnd: now + PERIOD_MS[period], amountCents: row.amountCents, processor: this.d.money.processor.name, createdAt: now, updatedAt: now,
      })
      const paid = {
        subscriptionId: subscription.id, kind: 'purchase' as const, description: `${payment.description}, ${iso(now).slice(0, 10)} to ${iso(now + PERIOD_MS[period]).slice(0, 10)}`,
        periodStart: now, periodEnd: now + PERIOD_MS[period],
      }
      if (payment.paymentId) {
        // A direct payment: the charges service's pending payment, settled with the purchase.
        // What it paid for first, so the settled payment (and its event) tells of it.
        this.d.money.billing.updatePayment(payment.paymentId, paid)
        this.d.money.charges.settle(payment.paymentId, { ok: true, paymentRef: payment.paymentRef, methodLabel: payment.methodLabel, paymentMethodId: payment.methodId ?? '', customerRef: payment.customerRef ?? null }, accountId)
      } else {
        // A hosted payment: the processor charged on its own page; its event is the record.
        this.d.money.charges.told(this.d.money.billing.insertPayment({
          id: crypto.randomUUID(), accountId, checkoutId: row.id, amountCents: row.amountCents, currency: row.currency,
          status: 'succeeded', processor: this.d.money.processor.name, processorRef: payment.paymentRef, methodLabel: payment.methodLabel, testMode: this.d.money.processor.testMode, createdAt: now, ...paid,
        }))
      }
      // The method that paid is kept on file: renewals, prorations and domains charge it.
      if (payment.methodId) this.d.buyers.accounts.setPaymentMethod(accountId, payment.methodId, payment.methodLabel, now, payment.customerRef)
      const site = this.d.sites.createRecord({ id: row.siteId, accountId, subscriptionId: subscription.id, slug: row.requestedSlug!, planSlug: row.planSlug })
      // The key is shown once: in this response for a direct payment, else on the next poll.
      const direct = payment.method === 'processor_payment_method' && !payment.keyOnNextPoll
      const apiKey = row.anonymous && direct ? this.d.buyers.keys.issue(accountId, 'Agent Key', ['read', 'write', 'admin']).api_key : null
      const session = this.d.repo.update(row.id, {
        status: 'completed', accountId, siteId: site.id, subscriptionId: subscription.id, paymentMethod: payment.method,
        apiKeyState: row.anonymous ? (direct ? 'delivered' : 'pending') : 'none', completedAt: now, updatedAt: now,
      })
      return { session, apiKey, used: true }
    })
    this.d.jobs.kick()
    if (result.used) this.d.log.info('checkout completed', { session: id, site: result.session.requestedSlug, plan: result.session.planSlug })
    return result
  }

  /**
   * Throws not_found unless `secret` is the session's: each door checks it before anything else
   * about the request, so a stranger learns nothing (design.md, Checkout). No side effects.
   */
  prove(id: string, secret: string | undefined): CheckoutRow {
    const row = this.d.repo.find(id)
    // A wrong or missing secret answers exactly like an unknown session (design.md, Checkout).
    if (!row || !secret || !timingSafeEqual(row.secretHash, sha256(secret))) {
      throw notFound(`No checkout ${id} with that checkout_secret; send the checkout_secret that creating the checkout returned.`, 'checkout_id')
    }
    return row
  }

  private authorize(id: string, secret: string | undefined): CheckoutRow {
    const row = this.prove(id, secret)
    if (['not_ready', 'ready', 'awaiting_payment'].includes(row.status) && row.expiresAt <= this.d.clock.now()) {
      if (row.requestedSlug && row.status !== 'not_ready') this.d.sites.release(row.requestedSlug)
      return this.d.repo.update(row.id, { status: 'canceled', error: 'Expired 24 h after creation without payment.', updatedAt: this.d.clock.now() })
    }
    return row
  }

  private parseSku(sku: string) {
    const prefix = `${this.d.prefix}_`
    const m = /^(.+)_(monthly|annual)$/.exec(sku.startsWith(prefix) ? sku.slice(prefix.length) : '')
    if (!m) throw invalid('sku', say`SKU '${sku}' is not of the form ${prefix}{plan_slug}_{monthly|annual}; ${op('listPlans')} lists each plan's skus.`)
    const plan = this.d.plans.requireActive(m[1], 'sku')
    return { plan, period: m[2] as 'monthly' | 'annual' }
  }

  private wrongState(row: CheckoutRow, action: string, needed: string) {
    return conflict(`This session is ${row.status}; it can be ${action} only while ${needed}.`, 'status')
  }

  private async guard<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call()
    } catch (err) {
      this.d.log.error('payment processor unreachable', { processor: this.d.money.processor.name, error: (err as Error).message })
      throw unavailable('The payment processor cannot be reached; nothing was charged. Retry in a minute.')
    }
  }

  private view(row: CheckoutRow): CheckoutView {
    const site = row.status === 'completed' ? row.requestedSlug : null
    return {
      id: row.id,
      sku: row.sku,
      plan_slug: row.planSlug,
      billing_period: row.billingPeriod,
      status: row.status,
      buyer_email: row.buyerEmail,
      requested_slug: row.requestedSlug,
      amount: row.amountCents / 100,
      currency: 'CAD',
      created_at: iso(row.createdAt),
      expires_at: iso(row.expiresAt),
      test_mode: this.d.money.processor.testMode,
      payment_method: row.paymentMethod,
      ...(row.processorCheckoutUrl ? { processor_checkout_url: row.processorCheckoutUrl } : {}),
      subscription_id: row.subscriptionId,
      site_slug: site,
      site_url: site ? this.d.sites.siteUrl(site) : null,
      error: row.error,
    }
  }
}

function timingSafeEqual(a: string, b: string): boolean {
  return a.length === b.length && nodeTimingSafeEqual(Buffer.from(a), Buffer.from(b))
}

/** How a session was paid, for `fulfil`. */
interface FulfilPayment {
  /** A direct payment's pending payment (the charges service's); absent for a hosted payment. */
  paymentId?: string
  paymentRef: string
  methodLabel: string
  method: PaymentMethodKind
  methodId?: string
  customerRef?: string | null
  description: string
  /** A direct payment completed by the start-up pass: the new account's key shows on the next poll. */
  keyOnNextPoll?: boolean
}
