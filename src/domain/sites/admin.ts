import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteStatus } from '../../core/enums'
import type { AccountRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, invalid, notFound } from '../errors'
import type { SiteLifecycle } from './lifecycle'
import type { SiteReaper } from './reaper'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'
import type { SitesService } from './service'
import { liftedState, type Lifted } from './suspension'
import type { SiteView } from './views'
import type { BillingRecords } from '../billing'

/** The longest reason an admin may give (it is shown to the owner in the site's view). */
export const MAX_REASON_LENGTH = 500

/** A site as the hoster sees it (berth sites list/show): the owner's view, and what only the box knows. */
export interface AdminSiteView extends Omit<SiteView, 'status'> {
  status: SiteStatus
  account: { id: string; email: string | null; status: string }
  /** The host port of the site's sshd (vps and dedicated plans), or null. */
  ssh_port: number | null
  subscription_status: string | null
  updated_at: string
}

export interface SiteAdminDeps {
  store: Store
  clock: Clock
  log: Logger
  sites: Pick<SitesRepository, 'listLive' | 'findLiveBySlug' | 'find' | 'suspend' | 'setStatus' | 'scheduleDeletion'>
  views: Pick<SitesService, 'views'>
  /** The accounts area's lookup (accounts sits above sites, so sites names only what it reads). */
  accounts: { find(id: string): AccountRow | undefined }
  billing: Pick<BillingRecords, 'findSubscriptionById'>
  lifecycle: Pick<SiteLifecycle, 'delete'>
  reaper: Pick<SiteReaper, 'reap'>
  runner: Pick<SiteRunner, 'run' | 'stop'>
}

/**
 * The hoster's commands on any site of the box (berth sites list|show|suspend|resume|delete),
 * whoever owns it. They write the store (the desired state) first, then bring the container in
 * line through the SiteRunner, as the API's operations do. They run in `berth serve` (asked over
 * its admin socket), so its edge answers the suspended page at once, its healer leaves a
 * container the store says is suspended down, and its reconciler finishes what the engine could
 * not do.
 *
 * An admin's suspension (`suspended_by` admin) is lifted only by `resume`: a payment does not
 * lift it (SubscriptionSites). A billing suspension is not the admin's to lift: the site comes
 * back when its subscription is paid.
 */
export class SiteAdmin {
  constructor(private d: SiteAdminDeps) {}

  /** Every live site, oldest first; only an account's, or only those in a status, when given. */
  list(filter: { account?: string; status?: SiteStatus } = {}): AdminSiteView[] {
    const rows = this.d.sites.listLive().filter((s) => (!filter.account || s.accountId === filter.account) && (!filter.status || s.status === filter.status))
    return this.views(rows)
  }

  show(slug: string): AdminSiteView {
    return this.views([this.require(slug)])[0]!
  }

  /**
   * Suspends the site with the admin's reason: the edge answers the suspended page (the one an
   * unpaid site gets) as soon as the store says so, and the container is stopped, files kept. A
   * site billing had suspended becomes the admin's (a payment will not bring it back); suspending
   * an admin-suspended site again replaces the reason.
   */
  async suspend(slug: string, reason: string): Promise<AdminSiteView> {
    const why = reasonOf(reason)
    const site = this.d.store.write(() => {
      const current = this.require(slug)
      if (current.status === 'suspended' && current.suspendedBy === 'account') {
        throw conflict(`Site '${slug}' is suspended with its account (${current.accountId}); berth accounts resume lifts it.`)
      }
      if (current.status !== 'active' && current.status !== 'suspended') throw conflict(`Site '${slug}' is ${current.status}; only an active site can be suspended.`)
      return this.d.sites.suspend(current.id, 'admin', why, this.d.clock.now())
    })
    this.d.log.info('site suspended by the admin', { site: slug, reason: why })
    await this.stop(site)
    return this.show(slug)
  }

  /**
   * Lifts the admin's suspension: the site is active again and its container started (resolves
   * once its web server answers), unless its subscription lapsed meanwhile, when it stays
   * suspended, by billing now (a payment brings it back). Refused for a site the admin did not
   * suspend, or suspended with its account (berth accounts resume).
   */
  async resume(slug: string): Promise<AdminSiteView> {
    const { site, lifted } = this.d.store.write(() => {
      const current = this.require(slug)
      if (current.status !== 'suspended') throw conflict(`Site '${slug}' is ${current.status}, not suspended; there is nothing to resume.`)
      if (current.suspendedBy === 'account') throw conflict(`Site '${slug}' is suspended with its account; berth accounts resume ${current.accountId} lifts it (and its keys).`)
      if (current.suspendedBy !== 'admin') {
        throw conflict(`Site '${slug}' is suspended by billing: its subscription is unpaid. It comes back by itself once a payment goes through (the owner updates the payment method in the billing portal); the admin does not lift it.`)
      }
      const lifted = liftedState(current.subscriptionId ? this.d.billing.findSubscriptionById(current.subscriptionId) : undefined)
      return { site: applyLifted(this.d.sites, current, lifted, this.d.clock.now()), lifted }
    })
    this.d.log.info('admin suspension lifted', { site: slug, status: lifted.status })
    if (lifted.status === 'active') await this.d.runner.run(site, { waitForAnswer: true })
    return this.show(slug)
  }

  /**
   * Deletes the site as the API's delete does (pending_deletion for the 7-day grace period, the
   * container stopped; the owner can still restore it), or with `now` at once: the grace period
   * ends now and the deletion reaper removes the container, the files, the archives, the DNS
   * records and the site-scoped keys, and ends the subscription if no other site uses it.
   * Irreversible. Resolves to the site as it is after: pending_deletion, or deleted.
   */
  async delete(slug: string, opts: { now: boolean }): Promise<AdminSiteView> {
    const site = this.require(slug)
    if (!opts.now) {
      await this.d.lifecycle.delete(site)
      return this.show(slug)
    }
    this.d.store.write(() => {
      const current = this.require(slug)
      if (current.status === 'provisioning') throw conflict(`Site '${slug}' is still being set up; retry when berth sites show ${slug} says active.`)
      const now = this.d.clock.now()
      this.d.sites.scheduleDeletion(current.id, now, now)
    })
    this.d.log.info('site deleted now by the admin', { site: slug })
    const report = await this.d.reaper.reap()
    const after = this.d.sites.find(site.id)!
    if (after.status !== 'deleted') {
      throw new Error(`site '${slug}' could not be removed yet (${report.errors.join('; ') || 'still pending'}); it stays pending deletion past its deadline and the next reconcile pass of berth serve tries again`)
    }
    return this.views([after])[0]!
  }

  private require(slug: string): SiteRow {
    const site = this.d.sites.findLiveBySlug(slug)
    if (!site) throw notFound(`No site '${slug}' on this box; berth sites list shows them.`, 'slug')
    return site
  }

  private async stop(site: SiteRow): Promise<void> {
    await this.d.runner.stop(site.slug).catch((err) => this.d.log.warn('could not stop the suspended site now; the reconcile pass of berth serve will', { site: site.slug, error: (err as Error).message }))
  }

  private views(rows: SiteRow[]): AdminSiteView[] {
    const owners = new Map<string, AdminSiteView['account']>()
    const views = this.d.views.views(rows)
    return rows.map((row, i) => {
      let account = owners.get(row.accountId)
      if (!account) {
        const found = this.d.accounts.find(row.accountId)
        account = { id: row.accountId, email: found?.email ?? null, status: found?.status ?? 'unknown' }
        owners.set(row.accountId, account)
      }
      const subscription = row.subscriptionId ? this.d.billing.findSubscriptionById(row.subscriptionId) : undefined
      return { ...views[i]!, status: row.status, account, ssh_port: row.sshPort, subscription_status: subscription?.status ?? null, updated_at: iso(row.updatedAt) }
    })
  }
}

/** Writes what a lifted suspension makes of the site (call inside a transaction); the row after. */
export function applyLifted(sites: Pick<SitesRepository, 'setStatus' | 'suspend' | 'find'>, site: SiteRow, lifted: Lifted, at: number): SiteRow {
  if (lifted.status === 'active') sites.setStatus(site.id, 'active', at)
  else sites.suspend(site.id, lifted.by, lifted.reason, at)
  return sites.find(site.id)!
}

/** The admin's reason, trimmed; invalid when empty or too long (the owner reads it). */
export function reasonOf(reason: string): string {
  const trimmed = reason.trim()
  if (!trimmed) throw invalid('reason', 'Give the reason for the suspension (--reason TEXT); the owner sees it in the site\'s suspension.')
  if (trimmed.length > MAX_REASON_LENGTH) throw invalid('reason', `The reason is ${trimmed.length} characters; keep it within ${MAX_REASON_LENGTH}.`)
  return trimmed
}
