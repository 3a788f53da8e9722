import { NO_TLS, type TlsView } from '../tls/views'
import type { JobRunner } from '../../jobs/runner'
import { iso, type Clock } from '../../lib/clock'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { BillingRepository } from '../billing/repository'
import type { CheckoutRepository } from '../checkout/repository'
import type { AiModule } from '../enums'
import { forbidden, invalid, op, say } from '../errors'
import type { Principal } from '../keys/service'
import type { PlansService } from '../plans/service'
import { slugProblem } from '../slugs'
import { APPLY_JOBS, type ApplyKind } from './apply'
import { PROVISION_JOB } from './provisioning'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'
import type { SiteView } from './views'
import type { DnsRecordView } from '../dns/views'

export interface SitesServiceDeps {
  store: Store
  clock: Clock
  sites: SitesRepository
  checkouts: Pick<CheckoutRepository, 'holderOf'>
  billing: Pick<BillingRepository, 'findSubscription' | 'activeSubscriptions'>
  plans: Pick<PlansService, 'get'>
  jobs: Pick<JobRunner, 'enqueue' | 'kick' | 'pendingOf'>
  runner: Pick<SiteRunner, 'prepare' | 'release'>
  /** config `server.site_url` and `sites.domain`: where sites answer. */
  siteUrl: string
  sitesDomain: string
  /** The site's names: linked domains and DNS records (design.md, DNS, domains, TLS). */
  names: { linkedDomains(siteIds: string[]): Map<string, string[]>; recordsOf(sites: SiteRow[]): Map<string, DnsRecordView[]>; tls?(siteId: string): TlsView }
}

/** Sites as their owners see them, and the creation of new ones. */
export class SitesService {
  constructor(private d: SitesServiceDeps) {}

  /** Makes the network and volume of a site a checkout has reserved, ahead of payment (background). */
  prepare(siteId: string, slug: string): void {
    this.d.runner.prepare({ id: siteId, slug })
  }

  /** Undoes `prepare` for a reservation that ended without a site (canceled, expired). */
  release(slug: string): void {
    if (this.d.sites.findLiveBySlug(slug)) return
    this.d.runner.release(slug)
  }

  list(p: Principal): SiteView[] {
    return this.d.sites.listOwned(p.accountId).map((s) => this.view(s))
  }

  /**
   * Why `slug` cannot be used for a new site (invalid, reserved, taken by a live site or held by
   * another checkout), or undefined. `exceptCheckout` lets a session keep its own hold.
   */
  slugUnavailable(slug: string, exceptCheckout: string | null = null): string | undefined {
    const problem = slugProblem(slug)
    if (problem) return problem
    if (this.d.sites.findLiveBySlug(slug) || this.d.checkouts.holderOf(slug, exceptCheckout)) return `Slug '${slug}' is taken; choose another.`
    return undefined
  }

  /** Adds a site record in `provisioning` and queues its provisioning; call inside a transaction. */
  createRecord(input: { id?: string | null; accountId: string; subscriptionId: string | null; slug: string; planSlug: string }): SiteRow {
    const site = this.d.sites.insert({ ...input, id: input.id ?? crypto.randomUUID(), createdAt: this.d.clock.now() })
    this.d.jobs.enqueue(PROVISION_JOB, site.id)
    return site
  }

  /** A new site under an agency subscription with room left, else forbidden. */
  create(p: Principal, input: { slug: string; subscription_id?: string }): SiteView {
    const site = this.d.store.write(() => {
      const unavailable = this.slugUnavailable(input.slug)
      if (unavailable) throw invalid('slug', unavailable)
      const candidates = input.subscription_id
        ? [this.d.billing.findSubscription(p.accountId, input.subscription_id)].filter((s) => s !== undefined)
        : this.d.billing.activeSubscriptions(p.accountId)
      // An id named in a body that is not the caller's is a wrong field (422), as if it did not exist (docs/api.md).
      if (input.subscription_id && candidates.length === 0) throw invalid('subscription_id', say`No subscription ${input.subscription_id} in your account; ${op('listSubscriptions')} lists them.`)
      const withRoom = candidates.find((sub) => {
        if (sub.status !== 'active') return false
        const plan = this.d.plans.get(sub.planSlug)
        return this.d.sites.countForSubscription(sub.id) < plan.features.max_sites
      })
      if (!withRoom) {
        throw forbidden(say`No active subscription with room for another site: buy an agency plan (${op('createCheckout')}) or free a slot.`, input.subscription_id ? 'subscription_id' : null)
      }
      return this.createRecord({ accountId: p.accountId, subscriptionId: withRoom.id, slug: input.slug, planSlug: withRoom.planSlug })
    })
    this.d.jobs.kick()
    return this.view(site)
  }

  siteUrl(slug: string): string {
    const base = new URL(this.d.siteUrl)
    return `${base.protocol}//${slug}.${this.d.sitesDomain}${base.port ? `:${base.port}` : ''}/`
  }

  /** The site as its owner sees it (design.md, Sites). */
  view(site: SiteRow): SiteView {
    const plan = this.d.plans.get(site.planSlug)
    const enabled = JSON.parse(site.modules) as Partial<Record<AiModule, boolean>>
    return {
      slug: site.slug,
      plan: site.planSlug,
      hosting_type: plan.hosting_type,
      // A deleted site is never shown: not listed, and not_found on its routes.
      status: site.status as SiteView['status'],
      url: this.siteUrl(site.slug),
      domains: this.d.names.linkedDomains([site.id]).get(site.id) ?? [],
      dns_records: this.d.names.recordsOf([site]).get(site.id) ?? [],
      tls: this.d.names.tls?.(site.id) ?? NO_TLS,
      modules: Object.fromEntries(plan.features.ai_modules.map((m) => [m, enabled[m] ?? false])),
      resources: { memory_mb: plan.features.memory_mb, cpu_cores: plan.features.cpu_cores, disk_gb: plan.features.disk_gb },
      subscription_id: site.subscriptionId,
      created_at: iso(site.createdAt),
      error: site.error,
      deletion_scheduled_for: site.deletionScheduledFor === null ? null : iso(site.deletionScheduledFor),
      applying: this.applying(site.id),
    }
  }

  /** The change being applied to the site's container in the background, if any. */
  private applying(siteId: string): ApplyKind | null {
    const kind = this.d.jobs.pendingOf(siteId, Object.values(APPLY_JOBS))
    return (Object.entries(APPLY_JOBS).find(([, job]) => job === kind)?.[0] as ApplyKind | undefined) ?? null
  }
}
