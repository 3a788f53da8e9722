import type { Logger } from '../../lib/logger'
import type { Clock } from '../../lib/clock'
import type { AccountsRepository } from '../accounts/repository'
import type { BillingRepository } from '../billing/repository'
import { DomainError } from '../errors'
import type { DomainsRepository } from './repository'
import type { DomainsService } from './service'

const DAY_MS = 86_400_000
/** Domains with auto-renew are renewed this long before they expire. */
export const RENEW_AHEAD_MS = 30 * DAY_MS
/** A failed renewal is tried again after this long (and shows in the domain's renew_error). */
export const RENEW_RETRY_MS = DAY_MS

/**
 * Renews domains with auto-renew on, a year at a time, 30 days before they expire: charges the
 * account's payment method on file, then asks the registrar (which extends from the current
 * expiry, so a repeated renewal is refused rather than doubled). A failure is recorded on the
 * domain and tried again a day later; a domain past its expiry without renewal becomes `expired`
 * and leaves the DNS.
 */
export class DomainRenewals {
  private running = false

  constructor(private d: { repo: DomainsRepository; domains: DomainsService; accounts: Pick<AccountsRepository, 'find'>; billing: Pick<BillingRepository, 'insertPayment'>; clock: Clock; log: Logger; store: { write<T>(fn: () => T): T } }) {}

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

  private async renew(id: string): Promise<void> {
    const domain = this.d.repo.find(id)!
    const account = this.d.accounts.find(domain.accountId)
    const amount = domain.renewCents
    try {
      if (!account?.paymentMethodId) throw new Error('no payment method on file; add one through the billing portal (GET /account/billing-portal/)')
      const charge = await this.d.domains.charge(account, amount, `Domain ${domain.name}, renewal for 1 year`, domain.name, `domain-renewal:${domain.id}:${domain.expiresAt}`)
      let expiresAt: number
      try {
        expiresAt = (await this.d.domains.registrar(() => this.d.domains.registrarDriver().renew({ domain: domain.name, periodYears: 1, currentExpiry: domain.expiresAt }))).expiresAt
      } catch (err) {
        await this.d.domains.refund(charge.paymentRef, amount, `renewal of ${domain.name} failed`)
        throw err
      }
      const now = this.d.clock.now()
      this.d.store.write(() => {
        this.d.billing.insertPayment({
          id: crypto.randomUUID(), accountId: domain.accountId, checkoutId: null, subscriptionId: null, amountCents: amount, currency: 'cad', status: 'succeeded',
          processor: charge.processor, processorRef: charge.paymentRef, methodLabel: charge.methodLabel, testMode: charge.testMode, createdAt: now,
          kind: 'domain', description: `Domain ${domain.name}, renewal for 1 year`,
        })
        this.d.repo.update(domain.id, { expiresAt, renewError: null, updatedAt: now })
      })
      this.d.log.info('domain renewed', { domain: domain.name, expires_at: new Date(expiresAt).toISOString(), charged_cents: amount })
    } catch (err) {
      const reason = err instanceof DomainError || err instanceof Error ? err.message : String(err)
      this.d.store.write(() => this.d.repo.update(domain.id, { renewError: reason, updatedAt: this.d.clock.now() }))
      throw err
    }
  }

  private expire(now: number): void {
    this.d.store.write(() => {
      for (const d of this.d.repo.expiredBefore(now)) this.d.repo.update(d.id, { status: 'expired', updatedAt: now })
    })
  }
}
