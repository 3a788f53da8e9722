import type { JobRunner } from '../../jobs/runner'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { SiteStatus } from '../../core/enums'
import { conflict, op, say } from '../errors'
import { periodCents } from '../../core/money'
import type { BillingRecords, SubscriptionBilling } from '../billing'
import type { Plan, PlansService } from '../plans'
import { APPLY_JOBS } from './apply'
import { requireChangeable } from './guard'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'
import type { SitesService } from './service'
import { liftedState, suspendedByAdmin, type Lifted } from './suspension'
import type { SiteView } from './views'
import { diskTooSmall, type SiteDiskCache } from './disk'

/** The grace period between a site's deletion and the reaper (spec part 8). */
export const DELETION_GRACE_MS = 7 * 24 * 3600_000

/** Site statuses delete accepts; `provisioning` must finish first, `pending_deletion` is there already. */
const DELETABLE = new Set<SiteStatus>(['active', 'suspended', 'failed'])

export interface SiteLifecycleDeps {
  store: Store
  clock: Clock
  sites: SitesRepository
  views: Pick<SitesService, 'view'>
  billing: Pick<BillingRecords, 'findSubscriptionById' | 'changePlan' | 'updateSubscription'>
  /** Prorated charges and credits of a plan change (design.md, Money after the purchase). */
  money: Pick<SubscriptionBilling, 'prorate' | 'settleProration' | 'refundProration'>
  plans: Pick<PlansService, 'requireActive'>
  jobs: Pick<JobRunner, 'enqueue' | 'kick'>
  runner: Pick<SiteRunner, 'stop'>
  log: Logger
  /** The sites' disks: a plan whose disk_gb is less than a site's files use is refused (issue 38). */
  disks?: Pick<SiteDiskCache, 'fresh'>
  /** Throws a conflict when the site's databases do not fit the plan (how many, which engines: domain/databases DatabaseLife.requireFits). */
  databasesFit?: (site: SiteRow, plan: Plan) => void
}

/**
 * A site's plan changes and its deletion and restore (design.md, Sites: scale and delete).
 *
 * Each operation records the new desired state in one transaction and answers at once; the
 * container follows in the background (the apply jobs; the site's `applying` shows it), and the
 * reconcile pass finishes what the engine could not do (it is down): the store is the desired
 * state (design.md, Durability), and the change has been made as far as money and access go.
 * The sites passed in come from the SiteGuard (the caller's own); each change checks the site's
 * state again inside its transaction.
 */
export class SiteLifecycle {
  constructor(private d: SiteLifecycleDeps) {}

  /**
   * Moves the site, and the subscription it is billed under, to `newPlan`. The plan belongs to
   * the subscription, so on an agency subscription every site under it moves (each is resized);
   * the target plan must hold all of them (`max_sites`), else conflict. The same plan again is a
   * no-op that answers the site as it is, so a retry is safe (still conflict while the site cannot
   * change: pending deletion, provisioning...).
   *
   * Money: an upgrade charges the prorated difference for the rest of the period with the card on
   * file before anything changes (payment_declined and nothing changed on a decline); a downgrade
   * credits the difference to the next renewal. A charge whose change then cannot be made (the
   * site changed meanwhile) is refunded.
   */
  async scale(site: SiteRow, newPlan: string): Promise<SiteView> {
    // not_found (not yours: the guard), then invalid (no such plan on sale), then conflict (not in a state to change).
    const plan = this.d.plans.requireActive(newPlan, 'new_plan')
    requireChangeable(site)
    if (plan.slug === site.planSlug) return this.d.views.view(site)
    const slug = site.slug
    const check = () => {
      const current = requireChangeable(this.d.sites.find(site.id)!)
      const subscription = current.subscriptionId ? this.d.billing.findSubscriptionById(current.subscriptionId) : undefined
      if (subscription && subscription.status !== 'active') {
        throw conflict(say`The subscription of site '${slug}' is ${subscription.status}; only an active subscription can change plan (${op('listSubscriptions')}).`)
      }
      const group = subscription ? this.d.sites.listForSubscription(subscription.id) : [current]
      for (const s of group) this.d.databasesFit?.(s, plan)
      if (group.length > plan.features.max_sites) {
        throw conflict(
          say`Plan '${plan.slug}' holds ${plan.features.max_sites} site${plan.features.max_sites === 1 ? '' : 's'}, and the subscription of '${slug}' has ${group.length}; delete sites first or pick a plan with room (${op('listPlans')}).`,
          'new_plan',
        )
      }
      return { subscription, group }
    }
    const before = check()
    await this.requireRoomOnDisk(before.group, plan)
    const proration = before.subscription ? await this.d.money.prorate(before.subscription, periodCents(plan.price, before.subscription.billingPeriod), `${plan.name} (${plan.slug})`) : null
    let moved: SiteRow[]
    try {
      moved = this.d.store.write(() => {
        const { subscription, group } = check()
        if (subscription?.planSlug !== before.subscription?.planSlug) throw conflict(`The plan of site '${slug}' changed meanwhile; retry.`)
        const now = this.d.clock.now()
        if (subscription) {
          this.d.billing.changePlan(subscription.id, plan.slug, periodCents(plan.price, subscription.billingPeriod), now)
          if (proration) this.d.money.settleProration(proration)
          if (proration?.creditCents) this.d.billing.updateSubscription(subscription.id, { creditCents: subscription.creditCents + proration.creditCents })
        }
        this.d.sites.setPlan(group.map((s) => s.id), plan.slug, now)
        for (const s of group) if (s.status === 'active') this.d.jobs.enqueue(APPLY_JOBS.scale, s.id)
        return group.map((s) => this.d.sites.find(s.id)!)
      })
    } catch (err) {
      if (proration) await this.d.money.refundProration(proration, `plan change of ${slug} not made: ${(err as Error).message}`)
      throw err
    }
    this.d.jobs.kick()
    this.d.log.info('site scaled', { site: slug, from: site.planSlug, to: plan.slug, sites: moved.map((s) => s.slug) })
    return this.d.views.view(moved.find((s) => s.id === site.id)!)
  }

  /**
   * Conflict (409 DISK_TOO_SMALL, nothing changed, nothing charged) when a site that moves uses
   * more disk than the new plan's disk_gb; read fresh from each site's filesystem. A plan with
   * the same disk or more is never refused for it. A site whose disk the runtime cannot report
   * (none yet, the engine away) passes: its apply job keeps it on its bigger disk if the files
   * do not fit (apply.ts).
   */
  private async requireRoomOnDisk(group: SiteRow[], plan: { slug: string; features: { disk_gb: number } }): Promise<void> {
    if (!this.d.disks) return
    const wanted = plan.features.disk_gb * 1024 ** 3
    for (const s of group) {
      const disk = await this.d.disks.fresh(s.slug)
      if (disk && disk.limitBytes > wanted && disk.usedBytes >= wanted) throw diskTooSmall(s.slug, { slug: plan.slug, diskGb: plan.features.disk_gb }, disk.usedBytes)
    }
  }

  /**
   * `pending_deletion` until now + 7 days, the container stopped (the edge shows its
   * pending-deletion page at once, from the store). conflict while provisioning and when already
   * pending.
   */
  async delete(site: SiteRow): Promise<SiteView> {
    const slug = site.slug
    const scheduled = this.d.store.write(() => {
      const current = this.d.sites.find(site.id)!
      if (current.status === 'pending_deletion') {
        throw conflict(say`Site '${slug}' is already scheduled for deletion on ${iso(current.deletionScheduledFor!)}; ${op('restoreSite', { tenant_slug: slug })} to keep it.`)
      }
      if (!DELETABLE.has(current.status)) throw conflict(say`Site '${slug}' is still being set up; retry when ${op('getSite', { tenant_slug: slug })} shows status active.`)
      const now = this.d.clock.now()
      return this.d.sites.scheduleDeletion(site.id, now + DELETION_GRACE_MS, now)
    })
    this.d.log.info('site scheduled for deletion', { site: slug, at: iso(scheduled.deletionScheduledFor!) })
    await this.d.runner.stop(slug).catch((err) => this.d.log.warn('could not stop a site scheduled for deletion; the reconcile pass will', { site: slug, error: (err as Error).message }))
    return this.d.views.view(scheduled)
  }

  /**
   * Undoes a deletion within the grace period. The site returns to what it was: `failed` when
   * its provisioning had failed (it keeps its error), `suspended` by the admin when the admin had
   * suspended it (with the same reason), `suspended` by billing when its subscription is no longer
   * active, else `active`, its container started in the background (`applying: restore`).
   */
  restore(site: SiteRow): SiteView {
    const slug = site.slug
    const restored = this.d.store.write(() => {
      const current = this.d.sites.find(site.id)!
      if (current.status !== 'pending_deletion') throw conflict(`Site '${slug}' is not scheduled for deletion (status ${current.status}); there is nothing to restore.`)
      const now = this.d.clock.now()
      if (current.deletionScheduledFor! <= now) throw conflict(`The grace period of site '${slug}' ended on ${iso(current.deletionScheduledFor!)}; it is being deleted and cannot be restored.`)
      const back = this.stateAfterRestore(current)
      const row = this.d.sites.cancelDeletion(site.id, back.status, now)
      if (back.status === 'suspended' && back.by === 'billing') return this.d.sites.suspend(row.id, 'billing', back.reason, now)
      if (row.status === 'active') this.d.jobs.enqueue(APPLY_JOBS.restore, row.id)
      return row
    })
    this.d.jobs.kick()
    this.d.log.info('site restored', { site: slug, status: restored.status })
    return this.d.views.view(restored)
  }

  private stateAfterRestore(site: SiteRow): { status: 'failed' | 'suspended'; by?: undefined } | Lifted {
    if (site.error !== null) return { status: 'failed' }
    if (suspendedByAdmin(site)) return { status: 'suspended' }
    return liftedState(site.subscriptionId ? this.d.billing.findSubscriptionById(site.subscriptionId) : undefined)
  }
}

