import type { HostedSessionInfo } from '../../drivers/payments/local'
import type { PlansService } from '../plans'
import type { CheckoutRepository } from './repository'

/**
 * What the built-in processor's hosted payment page needs about one of its sessions, read from
 * the store (so a restart loses nothing); null for a session it does not know.
 */
export class HostedSessions {
  constructor(private d: { repo: Pick<CheckoutRepository, 'findByProcessorRef'>; plans: Pick<PlansService, 'get'> }) {}

  find(sessionRef: string): HostedSessionInfo | null {
    const row = this.d.repo.findByProcessorRef(sessionRef)
    if (!row) return null
    const plan = this.d.plans.get(row.planSlug)
    const state = row.status === 'awaiting_payment' ? 'open' : row.status === 'in_progress' ? 'processing' : row.status === 'completed' ? 'paid' : 'closed'
    return { reference: row.id, amountCents: row.amountCents, currency: row.currency, description: `${plan.name}, billed ${row.billingPeriod}, for ${row.requestedSlug}`, state }
  }
}
