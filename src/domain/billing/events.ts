/**
 * What happens to a subscription that matters beyond money. Billing decides when a subscription
 * is paid, lapses or ends; what that means for the sites under it (reactivated, suspended,
 * scheduled for deletion) is the sites area's business, which subscribes to these events in the
 * composition root. So billing imports nothing of sites, and sites read billing's facts.
 *
 * - `subscription_paid`: a renewal was paid (its sites suspended for want of it come back);
 * - `subscription_lapsed`: a past-due subscription reached 7 days unpaid (its sites stop);
 * - `subscription_ended`: it ended, canceled at period end or with its account (its sites are
 *   scheduled for deletion).
 */
export type SubscriptionEvent = { type: 'subscription_paid' | 'subscription_lapsed' | 'subscription_ended'; subscriptionId: string; at: number }

/**
 * A subscriber's answer to an event: the slugs of the sites it changed, and the work it left
 * for after the transaction commits (containers, the job queue's kick). `after` never throws.
 */
export interface SubscriptionReaction {
  sites: string[]
  after(): Promise<void>
}

export type SubscriptionListener = (event: SubscriptionEvent) => SubscriptionReaction

/** What billing reads of the sites under its subscriptions: their slugs, for views and receipts. */
export interface SubscribedSites {
  /** The live sites' slugs of each subscription, read once for a list. */
  slugsBySubscription(subscriptionIds: string[]): Map<string, string[]>
  /** Every site billed under the subscription. */
  listForSubscription(subscriptionId: string): { slug: string }[]
}

/**
 * The subscription events and their subscribers. `publish` is called inside the transaction
 * that records the change, and each subscriber's writes join it: the subscription and its sites
 * change together or not at all (a stop between them cannot leave a paid subscription's sites
 * suspended). The caller runs the returned `after` once the transaction has committed.
 */
export class SubscriptionEvents {
  private listeners: SubscriptionListener[] = []

  subscribe(listener: SubscriptionListener): void {
    this.listeners.push(listener)
  }

  publish(event: SubscriptionEvent): SubscriptionReaction {
    const reactions = this.listeners.map((listen) => listen(event))
    return {
      sites: reactions.flatMap((r) => r.sites),
      after: async () => {
        for (const r of reactions) await r.after()
      },
    }
  }
}
