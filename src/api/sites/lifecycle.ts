import type { Config } from '../../config/config'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { BillingRepository } from '../billing/repository'
import { ConflictError } from '../http/errors'
import type { Principal } from '../keys/service'
import type { Plan } from '../plans/model'
import type { PlansService } from '../plans/service'
import type { SiteEndpoints } from './endpoints'
import { siteSpec, waitForAnswer } from './provisioning'
import type { SitesRepository, SiteStatus } from './repository'
import type { SitesService, SiteView } from './service'

/** The grace period between DELETE /sites/{slug}/delete/ and the reaper (spec part 8). */
export const DELETION_GRACE_MS = 7 * 24 * 3600_000

/** Site statuses DELETE accepts; `provisioning` must finish first, `pending_deletion` is there already. */
const DELETABLE = new Set(['active', 'suspended', 'failed'])

/**
 * A site's plan changes and its deletion and restore (design.md, Sites: scale and delete).
 *
 * Each operation records the new desired state in one transaction first, then brings the
 * container in line before answering. When the engine cannot (it is down), the answer still
 * reports the recorded state and the reconcile pass finishes the work: the store is the desired
 * state (design.md, Durability), and the change has been made as far as money and access go.
 */
export class SiteLifecycle {
  constructor(
    private store: Store,
    private clock: Clock,
    private repo: SitesRepository,
    private sites: SitesService,
    private billing: BillingRepository,
    private plans: PlansService,
    private runtime: ContainerRuntime,
    private endpoints: SiteEndpoints,
    private config: Config,
    private log: Logger,
  ) {}

  /**
   * POST /sites/{slug}/scale/: moves the site, and the subscription it is billed under, to
   * `newPlan`. The plan belongs to the subscription, so on an agency subscription every site
   * under it moves (each is resized); the target plan must hold all of them (`max_sites`), else
   * 409. The same plan again is a no-op that answers the site as it is, so a retry is safe
   * (still 409 while the site cannot change: pending deletion, provisioning...).
   */
  async scale(p: Principal, slug: string, newPlan: string): Promise<SiteView> {
    // 404 (not yours), then 422 (no such plan on sale), then 409 (not in a state to change).
    this.sites.requireOwned(p, slug)
    const plan = this.plans.requireActive(newPlan, 'new_plan')
    const site = this.sites.requireChangeable(p, slug)
    if (plan.slug === site.planSlug) return this.sites.view(site)
    const from = site.planSlug
    const moved = this.store.write(() => {
      const current = this.sites.requireChangeable(p, slug)
      const subscription = current.subscriptionId ? this.billing.findSubscriptionById(current.subscriptionId) : undefined
      if (subscription && subscription.status !== 'active') {
        throw new ConflictError(`The subscription of site '${slug}' is ${subscription.status}; only an active subscription can change plan.`)
      }
      const group = subscription ? this.repo.listForSubscription(subscription.id) : [current]
      if (group.length > plan.features.max_sites) {
        throw new ConflictError(
          `Plan '${plan.slug}' holds ${plan.features.max_sites} site${plan.features.max_sites === 1 ? '' : 's'}, and the subscription of '${slug}' has ${group.length}; delete sites first or pick a plan with room (GET /plans/).`,
          'new_plan',
        )
      }
      const now = this.clock.now()
      if (subscription) this.billing.changePlan(subscription.id, plan.slug, periodAmountCents(plan, subscription.billingPeriod), now)
      this.repo.setPlan(group.map((s) => s.id), plan.slug, now)
      return group.map((s) => this.repo.find(s.id)!)
    })
    this.log.info('site scaled', { site: slug, from, to: plan.slug, sites: moved.map((s) => s.slug) })
    await Promise.all(moved.filter((s) => s.status === 'active').map((s) => this.applyRunning(s, 'scale')))
    return this.sites.view(moved.find((s) => s.id === site.id)!)
  }

  /**
   * DELETE /sites/{slug}/delete/: `pending_deletion` until now + 7 days, the container stopped
   * (the edge shows its pending-deletion page at once, from the store). 409 while provisioning
   * and when already pending.
   */
  async delete(p: Principal, slug: string): Promise<SiteView> {
    const scheduled = this.store.write(() => {
      const site = this.sites.requireOwned(p, slug)
      if (site.status === 'pending_deletion') {
        throw new ConflictError(`Site '${slug}' is already scheduled for deletion on ${iso(site.deletionScheduledFor!)}; POST /sites/${slug}/restore/ to keep it.`)
      }
      if (!DELETABLE.has(site.status)) throw new ConflictError(`Site '${slug}' is still being set up; retry when GET /sites/${slug}/ shows status active.`)
      const now = this.clock.now()
      return this.repo.scheduleDeletion(site.id, now + DELETION_GRACE_MS, now)
    })
    this.endpoints.delete(slug)
    this.log.info('site scheduled for deletion', { site: slug, at: iso(scheduled.deletionScheduledFor!) })
    await this.runtime.stopSite(slug).catch((err) => this.log.warn('could not stop a site scheduled for deletion; the reconcile pass will', { site: slug, error: (err as Error).message }))
    return this.sites.view(scheduled)
  }

  /**
   * POST /sites/{slug}/restore/: undoes a deletion within the grace period. The site returns to
   * what it was: `failed` when its provisioning had failed (it keeps its error), `suspended` when
   * its subscription is no longer active, else `active` with its container started.
   */
  async restore(p: Principal, slug: string): Promise<SiteView> {
    const restored = this.store.write(() => {
      const site = this.sites.requireOwned(p, slug)
      if (site.status !== 'pending_deletion') throw new ConflictError(`Site '${slug}' is not scheduled for deletion (status ${site.status}); there is nothing to restore.`)
      const now = this.clock.now()
      if (site.deletionScheduledFor! <= now) throw new ConflictError(`The grace period of site '${slug}' ended on ${iso(site.deletionScheduledFor!)}; it is being deleted and cannot be restored.`)
      return this.repo.cancelDeletion(site.id, this.statusAfterRestore(site), now)
    })
    this.log.info('site restored', { site: slug, status: restored.status })
    if (restored.status === 'active') await this.applyRunning(restored, 'restore')
    return this.sites.view(restored)
  }

  private statusAfterRestore(site: SiteRow): SiteStatus {
    if (site.error !== null) return 'failed'
    const subscription = site.subscriptionId ? this.billing.findSubscriptionById(site.subscriptionId) : undefined
    return subscription && subscription.status !== 'active' ? 'suspended' : 'active'
  }

  /**
   * Runs the site's container as its recorded plan says (recreated, files kept, when the image
   * or limits changed) and waits until it answers; a failure is left to the reconcile pass.
   */
  private async applyRunning(site: SiteRow, why: string): Promise<void> {
    try {
      const endpoint = await this.runtime.ensureSite(siteSpec(site, this.plans, this.config))
      this.endpoints.set(site.slug, endpoint)
      await waitForAnswer(endpoint)
    } catch (err) {
      this.log.warn(`the ${why} is recorded but its container is not in line yet; the reconcile pass will retry`, { site: site.slug, error: (err as Error).message })
    }
  }
}

/** What one billing period of `plan` costs, in CAD cents. */
function periodAmountCents(plan: Plan, period: string): number {
  return Math.round((period === 'annual' ? plan.price.annual : plan.price.monthly) * 100)
}
