import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { AccountRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, notFound } from '../errors'
import { applyLifted, liftedState, reasonOf, type SiteRecords, type SiteRunner } from '../sites'
import type { AccountsRepository } from './repository'
import type { BillingRecords } from '../billing'
import type { KeyRecords } from '../keys'

/** An account as the hoster sees it (berth accounts list/show). */
export interface AdminAccountView {
  id: string
  email: string | null
  name: string
  /** active, suspended (berth accounts suspend) or anonymized (deleted by its owner). */
  status: string
  /** Why it is suspended: the reason its sites carry (suspended_by account), or null. */
  suspended_reason: string | null
  created_at: string
  updated_at: string
  /** Keys not revoked (each answers 403 while the account is suspended). */
  active_keys: number
  subscriptions: { id: string; plan: string; status: string }[]
  sites: { slug: string; status: string; suspended_by: string | null }[]
}

export interface AccountAdminDeps {
  store: Store
  clock: Clock
  log: Logger
  accounts: Pick<AccountsRepository, 'listAll' | 'find' | 'update'>
  keys: Pick<KeyRecords, 'list'>
  sites: Pick<SiteRecords, 'listOwned' | 'suspend' | 'setStatus' | 'find'>
  billing: Pick<BillingRecords, 'findSubscriptionById' | 'liveSubscriptions'>
  runner: Pick<SiteRunner, 'run' | 'stop'>
}

/**
 * The hoster's commands on accounts (berth accounts list|show|suspend|resume). Suspending an
 * account holds everything it has: its keys answer 403 (KeysService: the account is suspended),
 * and its active sites, and those billing had suspended, are suspended with it (`suspended_by`
 * account, the reason on each), their containers stopped. Sites the admin suspended one by one
 * keep their own suspension. Resuming lifts exactly what the account's suspension did: the keys
 * work again, and its `account` sites come back (active, or suspended by billing when their
 * subscription is not paid).
 */
export class AccountAdmin {
  constructor(private d: AccountAdminDeps) {}

  list(): AdminAccountView[] {
    return this.d.accounts.listAll().map((a) => this.view(a))
  }

  show(id: string): AdminAccountView {
    return this.view(this.require(id))
  }

  async suspend(id: string, reason: string): Promise<AdminAccountView> {
    const why = reasonOf(reason)
    const stopped = this.d.store.write(() => {
      const account = this.require(id)
      if (account.status !== 'active') throw conflict(`Account ${id} is ${account.status}; only an active account can be suspended.`)
      // A site being set up would turn active after the suspension (its provisioning job does), as account deletion says.
      const settingUp = this.d.sites.listOwned(id).find((s) => s.status === 'provisioning')
      if (settingUp) throw conflict(`Site '${settingUp.slug}' of account ${id} is still being set up; retry in a minute, when berth sites show ${settingUp.slug} says active (nothing was suspended).`)
      const now = this.d.clock.now()
      this.d.accounts.update(id, { status: 'suspended', updatedAt: now })
      const held = this.d.sites.listOwned(id).filter((s) => s.status === 'active' || (s.status === 'suspended' && s.suspendedBy !== 'admin'))
      for (const site of held) this.d.sites.suspend(site.id, 'account', why, now)
      return held.filter((s) => s.status === 'active')
    })
    this.d.log.info('account suspended by the admin', { account: id, reason: why, sites: stopped.map((s) => s.slug) })
    await Promise.all(stopped.map((site) => this.d.runner.stop(site.slug).catch((err) => this.d.log.warn('could not stop a site of a suspended account now; the reconcile pass of berth serve will', { site: site.slug, error: (err as Error).message }))))
    return this.show(id)
  }

  /** Resolves once the sites it brings back answer. */
  async resume(id: string): Promise<AdminAccountView> {
    const started = this.d.store.write(() => {
      const account = this.require(id)
      if (account.status !== 'suspended') throw conflict(`Account ${id} is ${account.status}, not suspended; there is nothing to resume.`)
      const now = this.d.clock.now()
      this.d.accounts.update(id, { status: 'active', updatedAt: now })
      const back: SiteRow[] = []
      for (const site of this.d.sites.listOwned(id)) {
        if (site.status !== 'suspended' || site.suspendedBy !== 'account') continue
        const lifted = liftedState(site.subscriptionId ? this.d.billing.findSubscriptionById(site.subscriptionId) : undefined)
        const row = applyLifted(this.d.sites, site, lifted, now)
        if (row.status === 'active') back.push(row)
      }
      return back
    })
    this.d.log.info('account suspension lifted', { account: id, sites: started.map((s) => s.slug) })
    await Promise.all(started.map((site) => this.d.runner.run(site, { waitForAnswer: true })))
    return this.show(id)
  }

  private require(id: string): AccountRow {
    const account = this.d.accounts.find(id)
    if (!account) throw notFound(`No account ${id} on this box; berth accounts list shows them.`, 'id')
    return account
  }

  private view(a: AccountRow): AdminAccountView {
    const sites = this.d.sites.listOwned(a.id)
    return {
      id: a.id,
      email: a.email,
      name: a.name,
      status: a.status,
      suspended_reason: a.status === 'suspended' ? sites.find((s) => s.suspendedBy === 'account')?.suspendedReason ?? null : null,
      created_at: iso(a.createdAt),
      updated_at: iso(a.updatedAt),
      active_keys: this.d.keys.list(a.id, false).length,
      subscriptions: this.d.billing.liveSubscriptions(a.id).map((s) => ({ id: s.id, plan: s.planSlug, status: s.status })),
      sites: sites.map((s) => ({ slug: s.slug, status: s.status, suspended_by: s.status === 'suspended' ? s.suspendedBy ?? 'billing' : null })),
    }
  }
}
