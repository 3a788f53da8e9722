import type { SubscriptionRow, SiteRow } from '../../store/schema'

/** The reason billing records when a lapsed subscription suspends its sites. */
export const UNPAID_REASON = 'The subscription is unpaid (7 days past due); the site comes back once a payment goes through.'

/** What a site becomes when an admin's suspension (or a pending deletion) is lifted. */
export type Lifted = { status: 'active' } | { status: 'suspended'; by: 'billing'; reason: string }

/**
 * The state a site returns to when nothing of the admin's holds it any more: active while its
 * subscription is active (or it has none), else suspended by billing, as the lapse would have made
 * it: a payment then brings it back as usual.
 */
export function liftedState(subscription: Pick<SubscriptionRow, 'status'> | undefined): Lifted {
  return subscription && subscription.status !== 'active' ? { status: 'suspended', by: 'billing', reason: UNPAID_REASON } : { status: 'active' }
}

/** True when only the admin may lift the site's suspension (berth sites resume, berth accounts resume). */
export function suspendedByAdmin(site: Pick<SiteRow, 'status' | 'suspendedBy'>): boolean {
  return site.status !== 'deleted' && (site.suspendedBy === 'admin' || site.suspendedBy === 'account')
}
