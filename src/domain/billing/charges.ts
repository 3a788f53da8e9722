import { ProcessorUnavailableError, type ChargeResult, type PaymentProcessor } from '../../drivers/payments/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { PaymentRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { BillingRepository, NewPayment } from './repository'
import type { EventLog } from '../events'
import { paymentView } from './views'

/** What a charge pays for, as the pending payment records it. */
export interface ChargeRequest {
  /**
   * The processor's idempotency key, derived from what is paid for and never random
   * (`renewal:<subscription>:<period end>:<attempt>`, `domain-register:<name>:<domain id>`...):
   * the same key is the same charge, before and after a crash.
   */
  key: string
  kind: NonNullable<NewPayment['kind']>
  /** Null only for an anonymous buyer's checkout (the account is made when it is paid). */
  accountId: string | null
  checkoutId?: string | null
  subscriptionId?: string | null
  amountCents: number
  description: string
  periodStart?: number | null
  periodEnd?: number | null
  /** The processor's payment method id to charge. */
  paymentMethodId: string
}

/** What the processor call needs beyond the payment row. */
export interface CollectOptions {
  /** Our reference for the processor's metadata (`renewal:<subscription>`, the checkout id...). */
  reference: string
  customerRef?: string | null
  customerEmail?: string | null
  /** The payer is not present (renewals, prorations, domains). */
  offSession?: boolean
}

export type Approved = Extract<ChargeResult, { ok: true }>
export type Declined = Extract<ChargeResult, { ok: false }>

/**
 * Resumes one kind of payment left `pending` by a stopped process: charges it again with its
 * key (the processor returns the first outcome, or charges now if the first call never reached
 * it), then delivers what it paid for or refunds it.
 */
export type PendingResumer = (payment: PaymentRow) => Promise<void>

/**
 * Every charge Berth makes goes through here, in three steps that a `kill -9` at any point
 * neither skips nor doubles (design.md, Durability; the renewal charge was the model):
 *
 * 1. `open`: a `pending` payment is written with an idempotency key derived from what is paid
 *    for, before the processor hears of it;
 * 2. `collect`: the processor is asked with that key (its contract: the same key never charges
 *    twice, and returns the first outcome);
 * 3. `settle`: the outcome is written (succeeded or failed), in the transaction that delivers
 *    what was paid for when the caller has one; `refund` gives back what cannot be delivered.
 *
 * A payment still `pending` after a crash is finished by whoever owns its subject: the renewal
 * pass and the domain jobs find their own by key; the start-up pass (`resumePending`) hands the
 * others (purchases, prorations) to the resumer registered for their kind.
 */
export class Charges {
  private resumers = new Map<string, PendingResumer>()

  constructor(private d: {
    store: Store; clock: Clock; log: Logger; repo: BillingRepository; processor: PaymentProcessor
    /** Records `payment.succeeded` / `payment.failed` in the transaction that settles the payment. */
    events?: Pick<EventLog, 'record'>
  }) {}

  /**
   * Step 1: the pending payment for `req.key`, written now (joining the caller's transaction
   * when there is one). When a payment with that key exists, it is returned as it is, whatever
   * its status: the caller resumes a pending one and must not charge a settled one again.
   */
  open(req: ChargeRequest): PaymentRow {
    return this.d.store.write(() => {
      const existing = this.d.repo.paymentByKey(req.key)
      if (existing) return existing
      return this.d.repo.insertPayment({
        id: crypto.randomUUID(), accountId: req.accountId, checkoutId: req.checkoutId ?? null, subscriptionId: req.subscriptionId ?? null,
        amountCents: req.amountCents, currency: 'cad', status: 'pending', processor: this.d.processor.name, processorRef: '', methodLabel: '',
        testMode: this.d.processor.testMode, createdAt: this.d.clock.now(), kind: req.kind, description: req.description, idempotencyKey: req.key,
        paymentMethodId: req.paymentMethodId, periodStart: req.periodStart ?? null, periodEnd: req.periodEnd ?? null,
      })
    })
  }

  /**
   * The key for paying for `base` now: the key of its attempt that is pending or succeeded
   * (resume it, do not pay twice), else `base` for a first attempt and `base:<n>` after `n - 1`
   * attempts that were declined or refunded (a retry is a new charge, not the first one's
   * remembered decline).
   */
  attemptKey(base: string): string {
    const attempts = this.d.repo.paymentsByKeyBase(base)
    const live = attempts.find((p) => p.status === 'pending' || p.status === 'succeeded')
    if (live) return live.idempotencyKey!
    return attempts.length === 0 ? base : `${base}:${attempts.length + 1}`
  }

  /**
   * Step 2: asks the processor to charge the pending payment, with its key. Writes nothing.
   * A payment of 0 is approved without asking (an account credit covered it). Throws
   * ProcessorUnavailableError when the processor cannot be reached: the payment stays pending
   * and the same call later is safe.
   */
  async collect(payment: PaymentRow, o: CollectOptions): Promise<ChargeResult> {
    if (payment.amountCents === 0) return { ok: true, paymentRef: `credit_${payment.id}`, methodLabel: 'account credit', paymentMethodId: payment.paymentMethodId ?? '', customerRef: null }
    if (!payment.paymentMethodId) return { ok: false, declineCode: 'no_payment_method', message: 'No payment method is on file.' }
    return this.d.processor.charge({
      reference: o.reference, idempotencyKey: payment.idempotencyKey!, amountCents: payment.amountCents, currency: payment.currency, paymentMethodId: payment.paymentMethodId,
      description: payment.description, customerRef: o.customerRef ?? null, customerEmail: o.customerEmail ?? null, offSession: o.offSession ?? false,
      openedAt: payment.createdAt,
    })
  }

  /**
   * Step 3: writes the processor's outcome on a pending payment (joining the caller's
   * transaction, so the payment and what it paid for change together). A payment that is not
   * pending any more is returned unchanged: settling twice is harmless. `accountId` fills in the
   * account of an anonymous checkout's payment once it exists.
   */
  settle(paymentId: string, result: ChargeResult, accountId?: string): PaymentRow {
    return this.d.store.write(() => {
      const payment = this.d.repo.findPaymentById(paymentId)!
      if (payment.status !== 'pending') return payment
      const now = this.d.clock.now()
      const account = accountId ? { accountId } : {}
      const settled = result.ok
        ? this.d.repo.updatePayment(paymentId, { ...account, status: 'succeeded', processorRef: result.paymentRef, methodLabel: result.methodLabel, createdAt: now })
        : this.d.repo.updatePayment(paymentId, { ...account, status: 'failed', failureCode: result.declineCode, failureMessage: result.message, createdAt: now })
      this.told(settled)
      return settled
    })
  }

  /**
   * Records the event of a payment that was just settled (succeeded or failed), in the caller's
   * transaction: `settle` calls it, and a payment written settled (a hosted checkout's) calls it
   * itself. A payment with no account yet (an anonymous checkout's) has nobody to tell.
   */
  told(payment: PaymentRow): void {
    if (payment.accountId === null || (payment.status !== 'succeeded' && payment.status !== 'failed')) return
    this.d.events?.record({ type: payment.status === 'succeeded' ? 'payment.succeeded' : 'payment.failed', accountId: payment.accountId, data: paymentView(payment) })
  }

  /**
   * Forgets a pending payment that the processor declined while its payer was present and
   * nothing depends on it (a checkout's card: the session stays ready for another). Only a
   * pending payment is removed.
   */
  discard(paymentId: string): void {
    this.d.store.write(() => this.d.repo.deletePendingPayment(paymentId))
  }

  /**
   * Gives back a succeeded payment whose subject could not be delivered, and records it
   * `refunded`. Idempotent (the processor refunds a payment once). Returns false, logged as an
   * error for the hoster to refund by hand, when the processor refused or could not be reached;
   * the start-up pass does not retry it, so the log line is the record.
   */
  async refund(paymentId: string, reason: string): Promise<boolean> {
    const payment = this.d.repo.findPaymentById(paymentId)
    if (!payment || payment.status === 'refunded') return true
    if (payment.status !== 'succeeded') return true
    if (payment.amountCents === 0 || payment.processorRef.startsWith('credit_')) {
      this.d.repo.markRefunded(payment.id, this.d.clock.now(), '', reason)
      return true
    }
    try {
      const { refundRef } = await this.d.processor.refund({ paymentRef: payment.processorRef, amountCents: payment.amountCents, reason })
      this.d.repo.markRefunded(payment.id, this.d.clock.now(), refundRef, reason)
      this.d.log.warn('payment refunded', { payment: payment.id, kind: payment.kind, refund: refundRef, reason })
      return true
    } catch (err) {
      this.d.log.error('refund failed; refund it by hand', { payment: payment.id, processor_ref: payment.processorRef, amount_cents: payment.amountCents, reason, error: (err as Error).message })
      return false
    }
  }

  /** Registers who finishes pending payments of `kind` left by a stopped process. */
  onPending(kind: string, resumer: PendingResumer): void {
    this.resumers.set(kind, resumer)
  }

  /**
   * The start-up pass: every payment still pending that was opened before `before` (the start
   * of this process: nothing of an earlier process is in flight) goes to its kind's resumer.
   * Never throws; a payment whose resumer fails stays pending for the next start.
   */
  async resumePending(before: number): Promise<void> {
    for (const payment of this.d.repo.pendingPayments(before)) {
      const resume = this.resumers.get(payment.kind)
      if (!resume) continue
      try {
        await resume(payment)
      } catch (err) {
        const unreachable = err instanceof ProcessorUnavailableError
        this.d.log[unreachable ? 'warn' : 'error']('a payment interrupted by a stop could not be finished; it is tried again at the next start', { payment: payment.id, kind: payment.kind, error: (err as Error).message })
      }
    }
  }
}
