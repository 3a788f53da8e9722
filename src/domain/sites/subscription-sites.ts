import type { JobRunner } from '../../jobs/runner'
import type { Logger } from '../../lib/logger'
import type { SubscriptionEvent, SubscriptionReaction } from '../billing'
import { APPLY_JOBS } from './apply'
import { DELETION_GRACE_MS } from './lifecycle'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'
import { suspendedByAdmin, UNPAID_REASON } from './suspension'

const NOTHING: SubscriptionReaction = { sites: [], after: async () => undefined }

/**
 * What the sites under a subscription do when billing says it was paid, lapsed or ended
 * (billing/events.ts; subscribed in compose/money.ts). Each answer writes inside billing's transaction
 * and leaves the container work for after its commit:
 *
 * - paid: its sites suspended by billing are active again, their containers started by an apply
 *   job; a site the admin suspended (berth sites suspend, berth accounts suspend) stays suspended:
 *   a payment does not lift the hoster's decision;
 * - lapsed (7 days unpaid): its active sites are suspended by billing (`suspended_by` billing,
 *   with UNPAID_REASON) and their containers stopped, their files kept;
 * - ended: its sites are scheduled for deletion after the grace period (those already pending
 *   deletion or still provisioning aside) and their containers stopped.
 */
export class SubscriptionSites {
  constructor(private d: {
    sites: Pick<SitesRepository, 'listForSubscription' | 'setStatus' | 'suspend' | 'scheduleDeletion'>
    jobs: Pick<JobRunner, 'enqueue' | 'kick'>
    runner: Pick<SiteRunner, 'stop'>
    log: Logger
  }) {}

  /** The listener billing's SubscriptionEvents calls. */
  answer(event: SubscriptionEvent): SubscriptionReaction {
    switch (event.type) {
      case 'subscription_paid': return this.reactivate(event)
      case 'subscription_lapsed': return this.suspend(event)
      case 'subscription_ended': return this.scheduleDeletion(event)
    }
  }

  private reactivate({ subscriptionId, at }: SubscriptionEvent): SubscriptionReaction {
    const reactivated: string[] = []
    for (const site of this.d.sites.listForSubscription(subscriptionId)) {
      if (site.status !== 'suspended' || suspendedByAdmin(site)) continue
      this.d.sites.setStatus(site.id, 'active', at)
      this.d.jobs.enqueue(APPLY_JOBS.restore, site.id)
      reactivated.push(site.slug)
    }
    if (reactivated.length === 0) return NOTHING
    return { sites: reactivated, after: async () => this.d.jobs.kick() }
  }

  private suspend({ subscriptionId, at }: SubscriptionEvent): SubscriptionReaction {
    const active = this.d.sites.listForSubscription(subscriptionId).filter((site) => site.status === 'active')
    for (const site of active) this.d.sites.suspend(site.id, 'billing', UNPAID_REASON, at)
    const slugs = active.map((site) => site.slug)
    return {
      sites: slugs,
      after: async () => {
        for (const slug of slugs) await this.d.runner.stop(slug).catch((err) => this.d.log.warn('could not stop a suspended site; the reconcile pass will', { site: slug, error: (err as Error).message }))
      },
    }
  }

  private scheduleDeletion({ subscriptionId, at }: SubscriptionEvent): SubscriptionReaction {
    const scheduled: string[] = []
    for (const site of this.d.sites.listForSubscription(subscriptionId)) {
      if (site.status === 'pending_deletion' || site.status === 'provisioning') continue
      this.d.sites.scheduleDeletion(site.id, at + DELETION_GRACE_MS, at)
      scheduled.push(site.slug)
    }
    return {
      sites: scheduled,
      after: async () => {
        for (const slug of scheduled) await this.d.runner.stop(slug).catch(() => undefined)
      },
    }
  }
}
