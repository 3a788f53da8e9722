import type { Config } from '../../config/config'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import type { AiModule } from '../../domain/enums'
import { slugProblem } from '../../domain/slugs'
import { iso, type Clock } from '../../lib/clock'
import type { JobRunner } from '../../jobs/runner'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { BillingRepository } from '../billing/repository'
import type { CheckoutRepository } from '../checkout/repository'
import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from '../http/errors'
import type { Principal } from '../keys/service'
import type { PlansService } from '../plans/service'
import type { Plan } from '../plans/model'
import type { SitesRepository } from './repository'

export const PROVISION_JOB = 'provision_site'

const NOT_CHANGEABLE: Record<string, ((slug: string) => string) | undefined> = {
  pending_deletion: (slug) => `Site '${slug}' is scheduled for deletion; POST /sites/${slug}/restore/ first.`,
  provisioning: (slug) => `Site '${slug}' is still being set up; retry when GET /sites/${slug}/ shows status active.`,
  suspended: (slug) => `Site '${slug}' is suspended; settle its subscription (GET /account/subscriptions/) first.`,
  failed: (slug) => `Site '${slug}' failed to provision; it cannot be changed. Buy a new one.`,
}

export interface SiteView {
  slug: string
  plan: string
  hosting_type: Plan['hosting_type']
  status: 'provisioning' | 'active' | 'suspended' | 'pending_deletion' | 'failed'
  url: string
  domains: string[]
  modules: Record<string, boolean>
  resources: { memory_mb: number; cpu_cores: number; disk_gb: number }
  subscription_id: string | null
  created_at: string
  error: string | null
  deletion_scheduled_for: string | null
}

/** Sites as their owners see them, and the creation of new ones. */
export class SitesService {
  constructor(
    private store: Store,
    private clock: Clock,
    private repo: SitesRepository,
    private checkouts: CheckoutRepository,
    private billing: BillingRepository,
    private plans: PlansService,
    private jobs: JobRunner,
    private config: Config,
    private runtime: ContainerRuntime,
    private log: Logger,
  ) {}

  /**
   * Creates, in the background, the network and volume of a site that a checkout has just
   * reserved, so that provisioning after payment only makes the container. Best effort:
   * provisioning creates whatever is missing.
   */
  prepare(siteId: string, slug: string): void {
    this.runtime.prepareSite({ siteId, slug }).catch((err) => this.log.warn('could not prepare a reserved site', { site: slug, error: (err as Error).message }))
  }

  /** Undoes `prepare` for a reservation that ended without a site (canceled, expired). */
  release(slug: string): void {
    if (this.repo.findLiveBySlug(slug)) return
    this.runtime.removeSite(slug, { volume: true }).catch((err) => this.log.warn('could not release a reserved site', { site: slug, error: (err as Error).message }))
  }

  list(p: Principal): SiteView[] {
    return this.repo.listOwned(p.accountId).map((s) => this.view(s))
  }

  /** The caller's site; another account's site answers exactly like a missing one (404). */
  get(p: Principal, slug: string): SiteView {
    return this.view(this.requireOwned(p, slug))
  }

  requireOwned(p: Principal, slug: string): SiteRow {
    const site = this.repo.findOwned(p.accountId, slug)
    if (!site) throw new NotFoundError(`No site '${slug}' in your account; GET /sites/ lists yours.`, 'tenant_slug')
    return site
  }

  /**
   * The caller's site for an operation that changes it or needs its container (files, deploy,
   * snapshots, scale, SSH keys, modules...). 404 as `requireOwned`; 409 while the site is pending
   * deletion (restore it first), still provisioning, suspended or failed.
   */
  requireChangeable(p: Principal, slug: string): SiteRow {
    const site = this.requireOwned(p, slug)
    const why = NOT_CHANGEABLE[site.status]
    if (why) throw new ConflictError(why(slug))
    return site
  }

  /**
   * Why `slug` cannot be used for a new site (invalid, reserved, taken by a live site or held by
   * another checkout), or undefined. `exceptCheckout` lets a session keep its own hold.
   */
  slugUnavailable(slug: string, exceptCheckout: string | null = null): string | undefined {
    const problem = slugProblem(slug)
    if (problem) return problem
    if (this.repo.findLiveBySlug(slug) || this.checkouts.holderOf(slug, exceptCheckout)) return `Slug '${slug}' is taken; choose another.`
    return undefined
  }

  /** Adds a site record in `provisioning` and queues its provisioning; call inside a transaction. */
  createRecord(input: { id?: string | null; accountId: string; subscriptionId: string | null; slug: string; planSlug: string }): SiteRow {
    const site = this.repo.insert({ ...input, id: input.id ?? crypto.randomUUID(), createdAt: this.clock.now() })
    this.jobs.enqueue(PROVISION_JOB, site.id)
    return site
  }

  /** POST /sites/create/: a new site under an agency subscription with room left, else 403. */
  create(p: Principal, input: { slug: string; subscription_id?: string }): SiteView {
    const site = this.store.write(() => {
      const unavailable = this.slugUnavailable(input.slug)
      if (unavailable) throw new ValidationError('slug', unavailable)
      const candidates = input.subscription_id
        ? [this.billing.findSubscription(p.accountId, input.subscription_id)].filter((s) => s !== undefined)
        : this.billing.activeSubscriptions(p.accountId)
      if (input.subscription_id && candidates.length === 0) throw new NotFoundError(`No subscription ${input.subscription_id} in your account; GET /account/subscriptions/ lists them.`, 'subscription_id')
      const withRoom = candidates.find((sub) => {
        if (sub.status !== 'active') return false
        const plan = this.plans.get(sub.planSlug)
        return this.repo.countForSubscription(sub.id) < plan.features.max_sites
      })
      if (!withRoom) {
        throw new ForbiddenError('No active subscription with room for another site: buy an agency plan (POST /acp/checkouts/) or free a slot.', input.subscription_id ? 'subscription_id' : null)
      }
      return this.createRecord({ accountId: p.accountId, subscriptionId: withRoom.id, slug: input.slug, planSlug: withRoom.planSlug })
    })
    this.jobs.kick()
    return this.view(site)
  }

  siteUrl(slug: string): string {
    const base = new URL(this.config.server.siteUrl)
    return `${base.protocol}//${slug}.${this.config.sites.domain}${base.port ? `:${base.port}` : ''}/`
  }

  view(site: SiteRow): SiteView {
    const plan = this.plans.get(site.planSlug)
    const enabled = JSON.parse(site.modules) as Partial<Record<AiModule, boolean>>
    return {
      slug: site.slug,
      plan: site.planSlug,
      hosting_type: plan.hosting_type,
      status: site.status as SiteView['status'],
      url: this.siteUrl(site.slug),
      domains: [],
      modules: Object.fromEntries(plan.features.ai_modules.map((m) => [m, enabled[m] ?? false])),
      resources: { memory_mb: plan.features.memory_mb, cpu_cores: plan.features.cpu_cores, disk_gb: plan.features.disk_gb },
      subscription_id: site.subscriptionId,
      created_at: iso(site.createdAt),
      error: site.error,
      deletion_scheduled_for: site.deletionScheduledFor === null ? null : iso(site.deletionScheduledFor),
    }
  }
}
