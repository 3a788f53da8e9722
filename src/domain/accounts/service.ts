import { ProcessorUnavailableError, type PaymentProcessor } from '../../drivers/payments/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { AccountRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { BillingRecords, SubscriptionBilling } from '../billing'
import { conflict, invalid, notFound, op, say, unavailable } from '../errors'
import type { KeyRecords, Principal } from '../keys'
import { DELETION_GRACE_MS, type SiteRecords, type SiteRunner } from '../sites'
import type { AccountsRepository } from './repository'
import type { AccountDeleted, AccountView, BillingPortal, Language } from './views'
import type { DomainRecords } from '../domains'

export interface AccountsServiceDeps {
  store: Store
  clock: Clock
  log: Logger
  repo: AccountsRepository
  /** What an account holds, which its deletion revokes, schedules for deletion or stops renewing. */
  owned: {
    keys: Pick<KeyRecords, 'revokeForAccount'>
    sites: Pick<SiteRecords, 'listOwned' | 'scheduleDeletion'>
    domains: Pick<DomainRecords, 'listOwned' | 'update'>
  }
  /** The subscriptions a deletion ends, and the processor whose billing portal an account opens. */
  money: {
    billing: Pick<BillingRecords, 'liveSubscriptions'>
    subscriptions: Pick<SubscriptionBilling, 'endNow'>
    processor: PaymentProcessor
  }
  runner: Pick<SiteRunner, 'stop'>
  siteUrl: string
}

/** The account's own profile, its deletion, and the way to its billing portal (design.md, Money after the purchase). */
export class AccountsService {
  constructor(private d: AccountsServiceDeps) {}

  get(p: Principal): AccountView {
    return view(this.require(p.accountId))
  }

  /** Applies the fields given (the route has checked each); at least one is required. */
  update(p: Principal, input: { email?: string; language?: Language; first_name?: string; last_name?: string }): AccountView {
    if (Object.keys(input).length === 0) throw invalid(null, 'Send at least one of email, language, first_name, last_name.')
    const row = this.d.store.write(() => {
      this.require(p.accountId)
      return this.d.repo.update(p.accountId, {
        ...(input.email !== undefined ? { email: input.email.toLowerCase() } : {}),
        ...(input.language !== undefined ? { language: input.language } : {}),
        ...(input.first_name !== undefined ? { firstName: input.first_name } : {}),
        ...(input.last_name !== undefined ? { lastName: input.last_name } : {}),
        updatedAt: this.d.clock.now(),
      })
    })
    this.d.log.info('account updated', { account: p.accountId, fields: Object.keys(input) })
    return view(row)
  }

  /**
   * Irreversible: every key revoked at once, subscriptions canceled, sites scheduled for deletion
   * (the usual 7-day grace; their containers stop now), domains' auto-renew turned off, personal
   * fields replaced by placeholders. Payments are kept, tied only to the anonymized account.
   */
  async delete(p: Principal, confirm: string): Promise<AccountDeleted> {
    if (confirm !== 'DELETE') throw invalid('confirm', 'Deleting the account is irreversible; send confirm: "DELETE" (exactly, in capitals) to go ahead.')
    const now = this.d.clock.now()
    const result = this.d.store.write(() => {
      this.require(p.accountId)
      // A site being set up would come up after the deletion (the provisioning job marks it
      // active when its container answers), so wait for it, as site deletion does.
      const settingUp = this.d.owned.sites.listOwned(p.accountId).find((s) => s.status === 'provisioning')
      if (settingUp) throw conflict(say`Site '${settingUp.slug}' is still being set up; retry when ${op('getSite', { tenant_slug: settingUp.slug })} shows status active (nothing was deleted).`)
      const keysRevoked = this.d.owned.keys.revokeForAccount(p.accountId, now)
      const canceled: string[] = []
      for (const s of this.d.money.billing.liveSubscriptions(p.accountId)) {
        this.d.money.subscriptions.endNow(s, now)
        canceled.push(s.id)
      }
      // Sites outside a subscription (none today) go the same way.
      for (const site of this.d.owned.sites.listOwned(p.accountId)) {
        if (site.status === 'active' || site.status === 'suspended' || site.status === 'failed') this.d.owned.sites.scheduleDeletion(site.id, now + DELETION_GRACE_MS, now)
      }
      for (const domain of this.d.owned.domains.listOwned(p.accountId)) this.d.owned.domains.update(domain.id, { autoRenew: false, updatedAt: now })
      this.d.repo.update(p.accountId, {
        status: 'anonymized', email: null, name: 'Deleted account', firstName: null, lastName: null, language: 'en',
        paymentMethodId: null, paymentMethodLabel: null, processorCustomerRef: null, updatedAt: now,
      })
      const pending = this.d.owned.sites.listOwned(p.accountId).filter((s) => s.status === 'pending_deletion')
      return {
        id: p.accountId,
        status: 'anonymized' as const,
        keys_revoked: keysRevoked,
        subscriptions_canceled: canceled,
        sites_scheduled_for_deletion: pending.map((s) => ({ slug: s.slug, deletion_scheduled_for: iso(s.deletionScheduledFor!) })),
      }
    })
    this.d.log.info('account deleted (anonymized)', { account: p.accountId, keys_revoked: result.keys_revoked, sites: result.sites_scheduled_for_deletion.map((s) => s.slug) })
    for (const site of result.sites_scheduled_for_deletion) await this.d.runner.stop(site.slug).catch(() => undefined)
    return result
  }

  /** The processor's billing portal for the account: Stripe's session, or Berth's own signed page. */
  async billingPortal(p: Principal, flow: '' | 'payment_method_update'): Promise<BillingPortal> {
    const account = this.require(p.accountId)
    try {
      const portal = await this.d.money.processor.billingPortal({ accountId: account.id, customerRef: account.processorCustomerRef, returnUrl: `${this.d.siteUrl}/for-agents`, flow })
      return { url: portal.url, expires_at: iso(portal.expiresAt), flow, processor: this.d.money.processor.name, test_mode: this.d.money.processor.testMode }
    } catch (err) {
      if (err instanceof ProcessorUnavailableError) throw unavailable('The payment processor cannot be reached; retry in a minute.')
      throw err
    }
  }

  private require(id: string): AccountRow {
    const row = this.d.repo.find(id)
    if (!row || row.status !== 'active') throw notFound('This account no longer exists.')
    return row
  }
}

export function view(a: AccountRow): AccountView {
  return {
    id: a.id,
    email: a.email,
    language: a.language as Language,
    first_name: a.firstName,
    last_name: a.lastName,
    status: 'active',
    payment_method: a.paymentMethodLabel ? { label: a.paymentMethodLabel } : null,
    created_at: iso(a.createdAt),
    updated_at: iso(a.updatedAt),
  }
}
