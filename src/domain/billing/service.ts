import type { PaymentProcessor } from '../../drivers/payments/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { CheckoutRepository } from '../checkout/repository'
import type { BillingRepository } from './repository'

/** Money after the sale: refunds when a purchase cannot be delivered. */
export class BillingService {
  constructor(
    private repo: BillingRepository,
    private checkouts: CheckoutRepository,
    private processor: PaymentProcessor,
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
      const { refundRef } = await this.processor.refund({ paymentRef: payment.processorRef, amountCents: payment.amountCents, reason })
      this.repo.markRefunded(payment.id, this.clock.now(), refundRef, reason)
      this.log.warn('purchase refunded', { site: site.slug, payment: payment.id, refund: refundRef, reason })
    }
    if (session.subscriptionId) this.repo.endSubscription(session.subscriptionId, this.clock.now(), 'canceled')
    this.checkouts.update(session.id, { status: 'failed', error: `The site could not be provisioned and the payment was refunded: ${reason}`, updatedAt: this.clock.now() })
  }
}
