import type { Logger } from '../../lib/logger'
import type { Clock } from '../../lib/clock'
import type { AccountLookup } from './ports'
import { ProcessorUnavailableError } from '../../drivers/payments/types'
import type { DomainRow } from '../../store/schema'
import type { Charges } from '../billing'
import { DomainError } from '../errors'
import type { DomainsRepository } from './repository'
import type { DomainsService } from './service'
import type { DomainEvents } from './domain-events'

const DAY_MS = 86_400_000
/** Domains with auto-renew are renewed this long before they expire. */
export const RENEW_AHEAD_MS = 30 * DAY_MS
/** A failed renewal is tried again after this long (and shows in the domain's renew_error). */
export const RENEW_RETRY_MS = DAY_MS
/** An expiry this much later than Berth's record means the registrar renewed already. */
const RENEWED_BY_MS = 180 * DAY_MS

/**
 * Renews domains with auto-renew on, a year at a time, 30 days before they expire: charges the
 * account's payment method on file, then asks the registrar (which extends from the current
 * expiry, so a repeated renewal is refused rather than doubled). A failure is recorded on the
 * domain and tried again a day later; a domain past its expiry without renewal becomes `expired`
 * and leaves the DNS.
 */
export class DomainRenewals {
  private running = false

  constructor(private d: {
    repo: DomainsRepository
    domains: Pick<DomainsService, 'registrar' | 'registrarDriver'>
    accounts: AccountLookup
    charges: Pick<Charges, 'open' | 'attemptKey' | 'collect' | 'settle' | 'refund'>
    clock: Clock
    log: Logger
    store: { write<T>(fn: () => T): T }
    /** Records `domain.renewal_failed` with the domain's view (./domain-events.ts), in the write that keeps the failure. */
    events?: Pick<DomainEvents, 'record'>
  }) {}

  /** One pass; overlapping calls (maintenance every 30 s) wait for the next. Never throws. */
  async renewDue(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      const now = this.d.clock.now()
      for (const domain of this.d.repo.dueForRenewal(now + RENEW_AHEAD_MS)) {
        if (domain.status !== 'active') continue
        if (domain.renewError && now - domain.updatedAt < RENEW_RETRY_MS) continue
        await this.renew(domain.id).catch((err) => this.d.log.error('domain renewal failed', { domain: domain.name, error: (err as Error).message }))
      }
      this.expire(now)
    } finally {
      this.running = false
    }
  }

  /**
   * One renewal, in the charges service's steps: the pending payment (key
   * `domain-renew:<name>:<current expiry>`, a new attempt suffix after a decline), the charge,
   * its settlement, then the registrar; a stop anywhere resumes here on the next pass (the
   * domain is still due with the same expiry, so the same key).
   */
  private async renew(id: string): Promise<void> {
    const domain = this.d.repo.find(id)!
    const account = this.d.accounts.find(domain.accountId)
    const amount = domain.renewCents
    const description = `Domain ${domain.name}, renewal for 1 year`
    try {
      if (!account?.paymentMethodId) throw new Error('no payment method is on file; add a card through the account billing portal')
      const payment = this.d.charges.open({
        key: this.d.charges.attemptKey(`domain-renew:${domain.name}:${domain.expiresAt}`), kind: 'domain', accountId: domain.accountId, amountCents: amount,
        paymentMethodId: account.paymentMethodId, description,
      })
      if (payment.status === 'pending') {
        let result
        try {
          result = await this.d.charges.collect(payment, { reference: `domain:${domain.name}`, customerRef: account.processorCustomerRef, offSession: true })
        } catch (err) {
          if (err instanceof ProcessorUnavailableError) throw new Error('the payment processor cannot be reached; retried on a later pass')
          throw err
        }
        const settled = this.d.charges.settle(payment.id, result)
        if (settled.status === 'failed') throw new Error(`The payment method on file was declined (${settled.failureMessage}); replace it through the billing portal.`)
      }
      const expiresAt = await this.extend(domain, payment.id)
      const now = this.d.clock.now()
      this.d.store.write(() => this.d.repo.update(domain.id, { expiresAt, renewError: null, updatedAt: now }))
      this.d.log.info('domain renewed', { domain: domain.name, expires_at: new Date(expiresAt).toISOString(), charged_cents: amount })
    } catch (err) {
      const reason = err instanceof DomainError || err instanceof Error ? err.message : String(err)
      this.d.store.write(() => {
        const failed = this.d.repo.update(domain.id, { renewError: reason, updatedAt: this.d.clock.now() })
        if (failed) this.d.events?.record('domain.renewal_failed', failed)
      })
      throw err
    }
  }

  /**
   * Asks the registrar for a year more and answers the new expiry. A renewal the registrar
   * already made (a stop after it answered, before Berth recorded it) is found with `find`
   * rather than refunded; one it refuses is refunded.
   */
  private async extend(domain: DomainRow, paymentId: string): Promise<number> {
    const registrar = this.d.domains.registrarDriver()
    try {
      return (await this.d.domains.registrar(() => registrar.renew({ domain: domain.name, periodYears: 1, currentExpiry: domain.expiresAt }))).expiresAt
    } catch (err) {
      const held = await registrar.find(domain.name).catch(() => null)
      if (held && held.expiresAt > domain.expiresAt + RENEWED_BY_MS) return held.expiresAt
      if (err instanceof DomainError && err.kind === 'unavailable') throw err
      await this.d.charges.refund(paymentId, `renewal of ${domain.name} failed`)
      throw err
    }
  }

  private expire(now: number): void {
    this.d.store.write(() => {
      for (const d of this.d.repo.expiredBefore(now)) this.d.repo.update(d.id, { status: 'expired', updatedAt: now })
    })
  }
}
