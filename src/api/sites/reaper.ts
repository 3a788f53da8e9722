import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { BillingRepository } from '../billing/repository'
import type { KeysRepository } from '../keys/repository'
import type { SiteEndpoints } from './endpoints'
import type { SitesRepository } from './repository'

/**
 * Something else a site owns that must go when the site is reaped: its snapshots and backups
 * (ArchiveRetention.removeAllFor in src/api/archives), later its DNS records. Must be idempotent: a reap
 * interrupted by a crash runs again from the start.
 */
export interface SiteDataPurger {
  removeAllFor(siteId: string): Promise<void>
}

export interface ReapReport {
  reaped: string[]
  errors: string[]
}

/**
 * The deletion reaper (design.md, Sites: delete), run by every reconcile pass: a site whose
 * 7-day grace period has ended at the injected clock's now loses its container, network and
 * volume (files), its archives and other data (`purgers`), and its site-scoped keys (revoked,
 * so they answer 401); the subscription ends when no other live site uses it; the site becomes
 * `deleted` (not listed, slug free again).
 *
 * Order: everything outside the store first, the store last in one transaction. A failure or
 * crash part-way leaves the site `pending_deletion` and past its deadline, so the next pass
 * runs the whole (idempotent) reap again; restore is refused past the deadline, so nothing can
 * bring the site back half-removed.
 */
export class SiteReaper {
  private running: Promise<ReapReport> | null = null

  constructor(
    private store: Store,
    private clock: Clock,
    private sites: SitesRepository,
    private keys: KeysRepository,
    private billing: BillingRepository,
    private runtime: ContainerRuntime,
    private endpoints: SiteEndpoints,
    private purgers: SiteDataPurger[],
    private log: Logger,
  ) {}

  /** Reaps every site due now; concurrent calls share the run in flight. */
  reap(): Promise<ReapReport> {
    this.running ??= this.run().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async run(): Promise<ReapReport> {
    const report: ReapReport = { reaped: [], errors: [] }
    for (const site of this.sites.listDueForDeletion(this.clock.now())) {
      try {
        await this.reapOne(site)
        report.reaped.push(site.slug)
      } catch (err) {
        report.errors.push(`${site.slug}: ${(err as Error).message}`)
      }
    }
    if (report.errors.length > 0) this.log.error('the deletion reaper could not remove every site; it retries on the next pass', { errors: report.errors })
    return report
  }

  private async reapOne(site: SiteRow): Promise<void> {
    this.endpoints.delete(site.slug)
    await this.runtime.removeSite(site.slug, { volume: true })
    for (const purger of this.purgers) await purger.removeAllFor(site.id)
    const outcome = this.store.write(() => {
      const now = this.clock.now()
      const current = this.sites.find(site.id)
      if (current?.status !== 'pending_deletion') return null
      const keys = this.keys.revokeForSite(site.id, now)
      this.sites.markDeleted(site.id, now)
      let subscription: string | null = null
      if (site.subscriptionId && this.sites.countForSubscription(site.subscriptionId) === 0) {
        const sub = this.billing.findSubscriptionById(site.subscriptionId)
        if (sub?.status === 'active' || sub?.status === 'past_due') {
          this.billing.endSubscription(sub.id, now, 'ended')
          subscription = sub.id
        }
      }
      return { keys, subscription }
    })
    if (outcome) this.log.info('site deleted after its grace period', { site: site.slug, site_id: site.id, keys_revoked: outcome.keys, subscription_ended: outcome.subscription })
  }
}
