import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { CheckoutRow, SiteRow } from '../../store/schema'
import type { Charges } from './charges'
import type { BillingRepository } from './repository'

/**
 * The checkout sessions a refund closes (the checkout area's repository: checkout sits above
 * billing, so billing declares what it uses).
 */
export interface CheckoutSessions {
  findBySite(siteId: string): CheckoutRow | undefined
  update(id: string, changes: Partial<CheckoutRow>): CheckoutRow
}

/** Money after the sale: refunds when a purchase cannot be delivered. */
export class BillingService {
  constructor(
    private repo: BillingRepository,
    private checkouts: CheckoutSessions,
    private charges: Pick<Charges, 'refund'>,
    private clock: Clock,
    private log: Logger,
  ) {}

  /**
   * Refunds the purchase that created `site` (when it had one), ends its subscription and marks
   * the checkout session failed with the reason. Safe to call twice.
   */
  async refundPurchaseOf(site: SiteRow, reason: string): Promise<void> {
    const session = this.checkouts.findBySite(site.id)
    if (!session) return
    const payment = this.repo.paymentForCheckout(session.id)
    if (payment && payment.status !== 'refunded') {
      // A refund the processor refuses is logged by the charges service for the hoster to make by hand.
      if (await this.charges.refund(payment.id, reason)) this.log.warn('purchase refunded', { site: site.slug, payment: payment.id, reason })
    }
    if (session.subscriptionId) this.repo.endSubscription(session.subscriptionId, this.clock.now(), 'canceled')
    this.checkouts.update(session.id, { status: 'failed', error: `The site could not be provisioned and the payment was refunded: ${reason}`, updatedAt: this.clock.now() })
  }
}
