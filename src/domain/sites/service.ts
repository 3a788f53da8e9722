import type { BoxRoom } from '../room'
import { NO_TLS, type TlsView } from '../tls'
import type { JobRunner } from '../../jobs/runner'
import { iso, type Clock } from '../../lib/clock'
import type { CheckoutRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { AiModule } from '../../core/enums'
import { forbidden, invalid, op, say } from '../errors'
import type { Principal } from '../keys'
import type { PlansService } from '../plans'
import type { BerthNames } from '../berth-names'
import { slugProblem } from '../../core/slugs'
import { APPLY_JOBS, type ApplyKind } from './apply'
import { PROVISION_JOB } from './provisioning'
import type { SitesRepository, SiteViewRow } from './repository'
import type { SiteRunner } from './runner'
import type { SiteAppView, SiteDatabaseView, SiteDetailView, SiteView, SuspensionView } from './views'
import { diskFigures, diskWarning, type SiteDiskCache, type SiteWarning } from './disk'
import type { DnsRecordView } from '../dns'
import type { BillingRecords } from '../billing'

export interface SitesServiceDeps {
  store: Store
  clock: Clock
  sites: SitesRepository
  /** Which open checkout holds a slug (the checkout area's repository: checkout sits above sites). */
  checkouts: { holderOf(slug: string, exceptId: string | null): CheckoutRow | undefined }
  billing: Pick<BillingRecords, 'findSubscription' | 'activeSubscriptions'>
  plans: Pick<PlansService, 'get'>
  /** The box's reserve of free space: a new site is refused (507) under it. */
  room?: Pick<BoxRoom, 'ensureRoom'>
  jobs: Pick<JobRunner, 'enqueue' | 'kick' | 'pendingFor'>
  runner: Pick<SiteRunner, 'prepare' | 'release'>
  /** config `server.site_url` and `sites.domain`: where sites answer. */
  siteUrl: string
  sitesDomain: string
  /** Berth's own names: a slug whose site name is one of them (or above one) is refused. */
  berthNames: Pick<BerthNames, 'slugProblem'>
  /**
   * The sites' names: linked domains, DNS records and certificates (design.md, DNS, domains,
   * TLS), each for many sites in one read, keyed by site id.
   */
  names: { linkedDomains(siteIds: string[]): Map<string, string[]>; recordsOf(sites: Pick<SiteRow, 'id' | 'slug'>[]): Map<string, DnsRecordView[]>; tls?(siteIds: string[]): Map<string, TlsView> }
  /**
   * The active sites berth serve's edge does not serve (their node down, a move under way, their
   * container known not to run: availability.ts): shown `recovering`, with `reason` as their
   * `error`; `version` moves whenever the set changes. Absent: none (an admin command's views).
   */
  recovering?: { recovering(): ReadonlySet<string>; version(): number; reason?(slug: string): string | null; nodeOrMove?(slug: string): boolean }
  /** The sites' disks (disk.ts), for one site's detail; absent: no figures (an admin command's views). */
  disks?: Pick<SiteDiskCache, 'get'>
  /** What an app site runs, for one site's detail (domain/apps AppViews); absent: null. */
  app?: (site: SiteRow) => Promise<SiteAppView | null>
  /** Its databases, for one site's detail (domain/databases summaryOf); absent: none. */
  databases?: (site: SiteRow) => Promise<SiteDatabaseView[]>
}

/** What a site's plan and module switches make of its view; the same for every site with both alike. */
type PlanPart = Pick<SiteView, 'hosting_type' | 'modules' | 'resources'>

/** The change each apply job kind makes (`apply_scale` → `scale`). */
const CHANGE_OF_JOB = new Map(Object.entries(APPLY_JOBS).map(([change, job]): [string, ApplyKind] => [job, change as ApplyKind]))

/** Sites as their owners see them, and the creation of new ones. */
export class SitesService {
  /** server.site_url's scheme and port, parsed once: every view of a list needs them. */
  private urlBase: { scheme: string; port: string }

  constructor(private d: SitesServiceDeps) {
    const stored = d.store.versionOf(['sites', 'names', 'certificates', 'jobs', 'plans'])
    const recovering = d.recovering
    // A node going down or coming back changes views without a write: its count moves the version
    // (both only grow, so their sum moves whenever either does).
    this.version = recovering ? () => stored() + recovering.version() : stored
    const base = new URL(d.siteUrl)
    this.urlBase = { scheme: base.protocol, port: base.port ? `:${base.port}` : '' }
  }

  /** Makes the network and volume of a site a checkout has reserved, ahead of payment (background). */
  prepare(siteId: string, slug: string, planSlug: string): void {
    this.d.runner.prepare({ id: siteId, slug, planSlug })
  }

  /** Undoes `prepare` for a reservation that ended without a site (canceled, expired). */
  release(slug: string): void {
    if (this.d.sites.findLiveBySlug(slug)) return
    this.d.runner.release(slug)
  }

  /**
   * A number that moves whenever anything a site's view shows may have changed: the version of
   * the areas views are made of (`Store.versionOf`: the sites, their domains and DNS records,
   * certificates, apply jobs, plans). Answers made of views can be kept until it moves.
   */
  readonly version: () => number

  list(p: Principal): SiteView[] {
    return this.views(this.d.sites.listOwnedForViews(p.accountId))
  }

  /**
   * Why `slug` cannot be used for a new site (invalid, reserved, naming one of Berth's own names, taken by a live site or held by
   * another checkout), or undefined. `exceptCheckout` lets a session keep its own hold.
   */
  slugUnavailable(slug: string, exceptCheckout: string | null = null): string | undefined {
    const problem = slugProblem(slug) ?? this.d.berthNames.slugProblem(slug)
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
      this.d.room?.ensureRoom('new sites')
      return this.createRecord({ accountId: p.accountId, subscriptionId: withRoom.id, slug: input.slug, planSlug: withRoom.planSlug })
    })
    this.d.jobs.kick()
    return this.view(site)
  }

  /** Where the site answers: `{scheme}//{slug}.{sites_domain}{:port}/`, with server.site_url's scheme and port. */
  siteUrl(slug: string): string {
    return `${this.urlBase.scheme}//${slug}.${this.d.sitesDomain}${this.urlBase.port}/`
  }

  /**
   * The owner's settings of a site: `hsts_max_age`, the Strict-Transport-Security max-age the
   * edge sends on the site's HTTPS answers (null turns HSTS off; 0 tells browsers to forget it).
   * The edge sees it from its next request (the sites area's version moves).
   */
  settings(site: SiteRow, input: { hsts_max_age: number | null }): SiteView {
    return this.view(this.d.sites.setHstsMaxAge(site.id, input.hsts_max_age, this.d.clock.now()))
  }

  /** The site as its owner sees it (design.md, Sites). */
  view(site: SiteRow): SiteView {
    return this.views([site])[0]!
  }

  /** One site with its disk's figures and warnings (GET /sites/{slug}/). */
  async detail(site: SiteRow): Promise<SiteDetailView> {
    const view = this.view(site)
    const [disk, app, databases] = await Promise.all([this.d.disks?.get(site.slug) ?? null, site.runtime !== null ? this.d.app?.(site) ?? null : null, this.d.databases?.(site) ?? []])
    const warnings = [diskWarning(site.slug, disk), appWarning(site.slug, app)].filter((w) => w !== null)
    return { ...view, usage: diskFigures(disk ?? null), warnings, app, databases }
  }

  /**
   * The sites as their owner sees them, in order. What lives beside a site (linked domains, DNS
   * records, certificates, pending changes) is read once for all of them, so a list costs the
   * same few queries whatever its length (issue 22: 100 sites took 41 ms when each site's view
   * ran its own four queries). The parts that come from the plan are made once per plan and
   * module switches and shared by the views that have them alike: treat views as read-only.
   */
  views(sites: SiteViewRow[]): SiteView[] {
    if (sites.length === 0) return []
    const ids = sites.map((s) => s.id)
    const domains = this.d.names.linkedDomains(ids)
    const records = this.d.names.recordsOf(sites)
    const tls = this.d.names.tls?.(ids)
    const applying = this.applying(ids)
    const recovering = this.d.recovering?.recovering()
    const planParts = new Map<string, PlanPart>()
    return sites.map((site) => {
      const fromPlan = this.planPart(site, planParts)
      // A change being applied (scale, restore) says itself why the container is down meanwhile.
      const change = applying.get(site.id) ?? null
      const down = site.status === 'active' && recovering?.has(site.slug) === true && (change === null || this.nodeOrMove(site.slug))
      return {
        slug: site.slug,
        plan: site.planSlug,
        hosting_type: fromPlan.hosting_type,
        // A deleted site is never shown: not listed, and not_found on its routes.
        status: down ? 'recovering' : site.status as SiteView['status'],
        url: this.siteUrl(site.slug),
        domains: domains.get(site.id) ?? [],
        dns_records: records.get(site.id) ?? [],
        tls: tls?.get(site.id) ?? NO_TLS,
        modules: fromPlan.modules,
        resources: fromPlan.resources,
        subscription_id: site.subscriptionId,
        created_at: iso(site.createdAt),
        error: site.error ?? (down ? this.d.recovering?.reason?.(site.slug) ?? null : null),
        deletion_scheduled_for: site.deletionScheduledFor === null ? null : iso(site.deletionScheduledFor),
        suspension: suspensionOf(site),
        hsts_max_age: site.hstsMaxAge,
        applying: change,
      }
    })
  }

  /** True when a recovering site's reason is its node or a move (not its own container, which a change being applied restarts). */
  private nodeOrMove(slug: string): boolean {
    return this.d.recovering?.nodeOrMove?.(slug) ?? true
  }

  /** The plan's part of a site's view, made once per plan and module switches (`made` keeps them). */
  private planPart(site: SiteViewRow, made: Map<string, PlanPart>): PlanPart {
    const key = `${site.planSlug}\n${site.modules}`
    let part = made.get(key)
    if (!part) {
      const plan = this.d.plans.get(site.planSlug)
      const enabled = JSON.parse(site.modules) as Partial<Record<AiModule, boolean>>
      part = {
        hosting_type: plan.hosting_type,
        modules: Object.fromEntries(plan.features.ai_modules.map((m) => [m, enabled[m] ?? false])),
        resources: { memory_mb: plan.features.memory_mb, cpu_cores: plan.features.cpu_cores, disk_gb: plan.features.disk_gb },
      }
      made.set(key, part)
    }
    return part
  }

  /** The change being applied to each site's container in the background, by site id (none absent). */
  private applying(siteIds: string[]): Map<string, ApplyKind> {
    const pending = this.d.jobs.pendingFor(siteIds, Object.values(APPLY_JOBS))
    return new Map([...pending].map(([siteId, job]) => [siteId, CHANGE_OF_JOB.get(job)!]))
  }
}

/** The suspension a site's view shows: who and why, for a suspended site only (a suspension from before 0014 was billing's). */
function suspensionOf(site: SiteViewRow): SuspensionView | null {
  if (site.status !== 'suspended') return null
  return { by: site.suspendedBy ?? 'billing', reason: site.suspendedReason }
}

/** app_crashing: a process of the app keeps exiting (the supervisor's crashing state). */
function appWarning(slug: string, app: SiteAppView | null): SiteWarning | null {
  const crashing = app?.processes?.filter((p) => p.state === 'crashing') ?? []
  if (crashing.length === 0) return null
  const names = crashing.map((p) => `${p.name} (last exit code ${p.last_exit_code ?? 'none'}, ${p.restarts} restarts)`).join(', ')
  return { code: 'app_crashing', message: `The app of site '${slug}' keeps exiting: ${names}; it is restarted with back-off. Read why in GET /sites/${slug}/logs/?type=app, fix it and deploy again, or roll back.` }
}
