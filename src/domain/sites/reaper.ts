import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'
import type { BillingRecords } from '../billing'
import type { KeyRecords } from '../keys'

/**
 * Something else a site owns that must go when the site is reaped: its snapshots and backups
 * (ArchiveRetention.removeAllFor in src/domain/archives), later its DNS records. Must be idempotent: a reap
 * interrupted by a crash runs again from the start.
 */
export interface SiteDataPurger {
  removeAllFor(siteId: string): Promise<void>
}

export interface SiteReaperDeps {
  store: Store
  clock: Clock
  sites: SitesRepository
  keys: Pick<KeyRecords, 'revokeForSite'>
  billing: Pick<BillingRecords, 'findSubscriptionById' | 'endSubscription'>
  runner: Pick<SiteRunner, 'remove'>
  /** What else a site owns (its archives; DNS records later), removed after its container and files. */
  purgers: SiteDataPurger[]
  log: Logger
}

export interface ReapReport {
  reaped: string[]
  errors: string[]
}

/**
 * The deletion reaper (design.md, Sites: delete), run by every reconcile pass: a site whose
 * 7-day grace period has ended at the injected clock's now loses its container, network and
 * volume (files), its archives and other data (`purgers`), and its site-scoped keys (revoked,
 * so they answer unauthorized); the subscription ends when no other live site uses it; the site becomes
 * `deleted` (not listed, slug free again).
 *
 * Order: everything outside the store first, the store last in one transaction. A failure or
 * crash part-way leaves the site `pending_deletion` and past its deadline, so the next pass
 * runs the whole (idempotent) reap again; restore is refused past the deadline, so nothing can
 * bring the site back half-removed.
 */
export class SiteReaper {
  private running: Promise<ReapReport> | null = null

  constructor(private d: SiteReaperDeps) {}

  /** Reaps every site due now; concurrent calls share the run in flight. */
  reap(): Promise<ReapReport> {
    this.running ??= this.run().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async run(): Promise<ReapReport> {
    const report: ReapReport = { reaped: [], errors: [] }
    for (const site of this.d.sites.listDueForDeletion(this.d.clock.now())) {
      try {
        await this.reapOne(site)
        report.reaped.push(site.slug)
      } catch (err) {
        report.errors.push(`${site.slug}: ${(err as Error).message}`)
      }
    }
    if (report.errors.length > 0) this.d.log.error('the deletion reaper could not remove every site; it retries on the next pass', { errors: report.errors })
    return report
  }

  private async reapOne(site: SiteRow): Promise<void> {
    await this.d.runner.remove(site.slug, { volume: true })
    for (const purger of this.d.purgers) await purger.removeAllFor(site.id)
    const outcome = this.d.store.write(() => {
      const now = this.d.clock.now()
      const current = this.d.sites.find(site.id)
      if (current?.status !== 'pending_deletion') return null
      const keys = this.d.keys.revokeForSite(site.id, now)
      this.d.sites.markDeleted(site.id, now)
      let subscription: string | null = null
      if (site.subscriptionId && this.d.sites.countForSubscription(site.subscriptionId) === 0) {
        const sub = this.d.billing.findSubscriptionById(site.subscriptionId)
        if (sub?.status === 'active' || sub?.status === 'past_due') {
          this.d.billing.endSubscription(sub.id, now, 'ended')
          subscription = sub.id
        }
      }
      return { keys, subscription }
    })
    if (outcome) this.d.log.info('site deleted after its grace period', { site: site.slug, site_id: site.id, keys_revoked: outcome.keys, subscription_ended: outcome.subscription })
  }
}
