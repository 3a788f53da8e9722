import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { domainStore, testProcessor } from '../../../test/helpers/domain-store'
import { RegistrarError, type Contact } from '../../drivers/registrar/types'
import { SandboxRegistrar } from '../../drivers/registrar/sandbox'
import { BerthNames } from '../berth-names'
import { Charges } from '../billing/charges'
import { BillingRepository } from '../billing/repository'
import type { DnsService } from '../dns/service'
import { EventLog } from '../events'
import type { Principal } from '../keys/service'
import { PERIOD_MS } from '../../core/money'
import { SitesRepository } from '../sites/repository'
import { DomainEvents } from './domain-events'
import { DomainRegistration, REGISTER_DOMAIN_JOB } from './registration'
import { DomainRenewals } from './renewals'
import { DomainsRepository } from './repository'
import { DomainsService } from './service'

/**
 * domain.registered and domain.renewal_failed (issue 41), with the setup of service.test.ts (a
 * real SQLite store, the embedded sandbox registrar, the built-in test processor): recorded in
 * the write of the change, holding the domain's view; with them, the payments' own events.
 */
const contact: Contact = { first_name: 'Ada', last_name: 'L', email: 'ada@example.com', phone: '+1.5555550100', address1: '1 Main', city: 'Ottawa', state: 'ON', postal_code: 'K1A0A1', country: 'CA' }

function setup(pricePercent = 120) {
  const t = domainStore()
  const pay = testProcessor(t)
  const sandbox = new SandboxRegistrar({ file: join(t.dir, 'registrar.json'), clock: t.clock })
  const settingsSent: string[] = []
  let reachable = true
  // The sandbox, with a switch for its reachability and a record of the settings sent to it.
  const base = SandboxRegistrar.prototype
  const registrar: SandboxRegistrar = Object.assign(Object.create(sandbox) as SandboxRegistrar, {
    async search(domain: string) {
      if (!reachable) throw new RegistrarError('unreachable', 'connect ECONNREFUSED')
      return base.search.call(registrar, domain)
    },
    async updateSettings(domain: string, s: { locked?: boolean; privacy?: boolean }) {
      if (!reachable) throw new RegistrarError('unreachable', 'connect ECONNREFUSED')
      settingsSent.push(domain)
      return base.updateSettings.call(registrar, domain, s)
    },
  })
  const billing = new BillingRepository(t.store)
  const charges = new Charges({ store: t.store, clock: t.clock, log: t.log, repo: billing, processor: pay.processor })
  const repo = new DomainsRepository(t.store)
  const sites = new SitesRepository(t.store)
  const dnsRemoved: string[] = []
  const dns = { removeAllOfDomain: (d: { name: string }) => void dnsRemoved.push(d.name), addToDomain: () => ({ ok: true }) } as unknown as DnsService
  const queued: string[] = []
  const jobs = { enqueue: (kind: string, id: string) => void queued.push(kind === REGISTER_DOMAIN_JOB ? id : kind), kick: () => undefined } as never
  const berthNames = new BerthNames({ sitesDomain: 'sites.test', siteUrl: 'https://api.berth.test', nameservers: ['ns1.berth.test', 'ns2.berth.test'] })
  const domains = new DomainsService({
    store: t.store, clock: t.clock, log: t.log, repo, registrar, money: { charges, billing, plans: t.plans }, jobs, accounts: t.accounts, sites, dns,
    terms: { nameservers: ['ns1.berth.test', 'ns2.berth.test'], berthNames, pricePercent },
  })
  const log = new EventLog({ store: t.store, clock: t.clock, log: t.log })
  const charges2 = new Charges({ store: t.store, clock: t.clock, log: t.log, repo: billing, processor: pay.processor, events: log })
  const domainEvents = new DomainEvents({ events: log, view: domains, sites })
  const job = new DomainRegistration({ store: t.store, clock: t.clock, log: t.log, repo, registrar, charges: charges2, billing, accounts: t.accounts, dns, events: domainEvents })
  const renewals = new DomainRenewals({ repo, domains, accounts: t.accounts, charges: charges2, clock: t.clock, log: t.log, store: t.store, events: domainEvents })
  const eventsOf = (accountId: string) => log.list({ accountId, limit: 100 }).map((e) => ({ type: e.type, data: JSON.parse(e.data) }))
  /** An account (a card on file unless `method` is null), as its key's principal. */
  function who(method: string | null = 'pm_card_visa'): Principal {
    return { accountId: t.account(method), email: 'ada@example.com' } as Principal
  }
  function subscribe(p: Principal, planSlug: string, billingPeriod: 'monthly' | 'annual') {
    const now = t.clock.now()
    billing.insertSubscription({ id: crypto.randomUUID(), accountId: p.accountId, planSlug, billingPeriod, status: 'active', currentPeriodEnd: now + PERIOD_MS[billingPeriod], amountCents: 0, processor: 'local', createdAt: now, updatedAt: now })
  }
  function site(p: Principal, slug: string) {
    return sites.insert({ id: crypto.randomUUID(), accountId: p.accountId, subscriptionId: null, slug, planSlug: 'starter', createdAt: t.clock.now() })
  }
  const register = (p: Principal, domain: string, period = 1) => domains.register(p, { domain, period, contact })
  const payment = (name: string) => t.store.sqlite.query("SELECT status, amount_cents AS amount FROM payments WHERE kind = 'domain' AND idempotency_key LIKE ?").get(`domain-register:${name}:%`)
  return { ...t, ...pay, renewals, eventsOf, registrar, settingsSent, setReachable: (v: boolean) => void (reachable = v), repo, domains, job, queued, dnsRemoved, who, subscribe, site, register, payment }
}

const DAY = 86_400_000

describe('domain events', () => {
  it('domain.registered once the registration went through, after its payment.succeeded', async () => {
    const t = setup()
    const p = t.who()
    await t.register(p, 'shop.com')
    await t.job.run(t.repo.findByName('shop.com')!.id)
    const events = t.eventsOf(p.accountId)
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded', 'domain.registered'])
    expect(events[1]!.data).toMatchObject({ domain: 'shop.com', status: 'active', error: null, auto_renew: true })
    expect(events[1]!.data.expires_at).toEqual(expect.any(String))
  })

  it('a registration the registrar refuses records no domain.registered', async () => {
    const t = setup()
    const p = t.who()
    await t.register(p, 'funds-shop.com')
    await t.job.run(t.repo.findByName('funds-shop.com')!.id)
    expect(t.eventsOf(p.accountId).map((e) => e.type)).toEqual(['payment.succeeded'])
  })

  it('domain.renewal_failed when the automatic renewal cannot be paid, with renew_error', async () => {
    const t = setup()
    const p = t.who()
    await t.register(p, 'shop.com')
    const row = t.repo.findByName('shop.com')!
    await t.job.run(row.id)
    t.store.sqlite.run('UPDATE accounts SET payment_method_id = NULL WHERE id = ?', [p.accountId])
    t.clock.set(t.repo.find(row.id)!.expiresAt - 10 * DAY)
    await t.renewals.renewDue()
    const events = t.eventsOf(p.accountId)
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded', 'domain.registered', 'domain.renewal_failed'])
    expect(events[2]!.data).toMatchObject({ domain: 'shop.com', status: 'active' })
    expect(events[2]!.data.renew_error).toContain('no payment method is on file')
  })
})
