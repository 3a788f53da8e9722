import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { domainStore, testProcessor } from '../../../test/helpers/domain-store'
import { RegistrarError, type Contact } from '../../drivers/registrar/types'
import { SandboxRegistrar } from '../../drivers/registrar/sandbox'
import { BerthNames } from '../berth-names'
import { Charges } from '../billing/charges'
import { BillingRepository } from '../billing/repository'
import type { DnsService } from '../dns/service'
import { DomainError } from '../errors'
import { EventLog } from '../events'
import type { Principal } from '../keys/service'
import { PERIOD_MS } from '../../core/money'
import { SitesRepository } from '../sites/repository'
import { DomainEvents } from './domain-events'
import { DomainRegistration, REGISTER_DOMAIN_JOB } from './registration'
import { DomainRenewals } from './renewals'
import { DomainsRepository } from './repository'
import { registrarError } from './registrar-errors'
import { DomainsService } from './service'

/**
 * Domains on a real SQLite store with the embedded sandbox registrar (.com costs 18.00 CAD a
 * year there; `taken.*` is taken, `funds-*` is refused at registration) and the built-in test
 * processor: names and Berth's own, prices at the hoster's percentage, the free first year,
 * registration paid and refunded when refused, links and settings. DNS is a double.
 */
const contact: Contact = { first_name: 'Ada', last_name: 'L', email: 'ada@example.com', phone: '+1.5555550100', address1: '1 Main', city: 'Ottawa', state: 'ON', postal_code: 'K1A0A1', country: 'CA' }

/** `events`: the payments, the registration job and the renewals record their events (issue 41). */
function setup(pricePercent = 120, o: { events?: boolean } = {}) {
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
  const paid = o.events ? new Charges({ store: t.store, clock: t.clock, log: t.log, repo: billing, processor: pay.processor, events: log }) : charges
  const recorded = o.events ? { events: new DomainEvents({ events: log, view: domains, sites }) } : {}
  const job = new DomainRegistration({ store: t.store, clock: t.clock, log: t.log, repo, registrar, charges: paid, billing, accounts: t.accounts, dns, ...recorded })
  const renewals = new DomainRenewals({ repo, domains, accounts: t.accounts, charges: paid, clock: t.clock, log: t.log, store: t.store, ...recorded })
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

/** The domain error `fn` throws, as its kind and field. */
async function refusal(fn: () => unknown): Promise<{ kind: string; field: string | null }> {
  try {
    await fn()
  } catch (err) {
    if (!(err instanceof DomainError)) throw err
    return { kind: err.kind, field: err.field }
  }
  throw new Error('not refused')
}

describe('search', () => {
  it('normalizes the name and prices it at the hoster’s percentage of the registrar’s price, in CAD', async () => {
    const t = setup(120)
    const p = t.who()
    expect(await t.domains.search(p, ' Shop.COM. ')).toEqual({
      domain: 'shop.com', available: true, premium: false, price: { registration: 21.6, renewal: 21.6, currency: 'CAD' }, first_year_free: false, sandbox: true,
    })
    expect((await t.domains.search(p, 'taken.com')).available).toBe(false)
    expect(await t.domains.search(p, 'premium-shop.net')).toMatchObject({ premium: true, price: { registration: 240, renewal: 264 } })
    expect((await setup(100).domains.search(p, 'shop.com')).price.registration).toBe(18)
  })

  it('refuses what is not a domain name, and Berth’s own names (equal, under or above), on domain', async () => {
    const t = setup()
    const p = t.who()
    for (const raw of ['shop', 'http://shop.com/', 'shop.com:80', '-shop.com', 'shop.c0m', `${'a'.repeat(64)}.com`]) {
      expect(await refusal(() => t.domains.search(p, raw)), raw).toEqual({ kind: 'invalid', field: 'domain' })
    }
    for (const own of ['sites.test', 'shop.sites.test', 'api.berth.test', 'berth.test', 'ns1.berth.test']) {
      expect(await refusal(() => t.domains.search(p, own)), own).toEqual({ kind: 'invalid', field: 'domain' })
    }
    await expect(t.domains.register(p, { domain: 'shop.sites.test', period: 1, contact })).rejects.toMatchObject({ kind: 'invalid', field: 'domain' })
  })

  it('maps an unreachable registrar to 503', async () => {
    const t = setup()
    t.setReachable(false)
    expect(await refusal(() => t.domains.search(t.who(), 'shop.com'))).toEqual({ kind: 'unavailable', field: null })
  })
})

describe('registration', () => {
  it('records the domain pending, opens its payment (price × years) keyed to the attempt, and queues the job', async () => {
    const t = setup()
    const p = t.who()
    const view = await t.register(p, 'shop.com', 2)
    expect(view).toMatchObject({ domain: 'shop.com', status: 'pending', charged: 43.2, expires_at: null, nameservers: ['ns1.berth.test', 'ns2.berth.test'], renewal_price: 21.6, linked_site: null })
    const row = t.repo.findByName('shop.com')!
    expect(t.queued).toEqual([row.id])
    expect(t.store.sqlite.query("SELECT status, amount_cents AS amount, idempotency_key AS key FROM payments WHERE kind = 'domain'").all())
      .toEqual([{ status: 'pending', amount: 4320, key: `domain-register:shop.com:${row.id}` }])
    expect((await t.domains.search(p, 'shop.com')).available).toBe(false)
    await t.job.run(row.id)
    expect(t.domains.get(p, 'shop.com')).toMatchObject({ status: 'active', error: null })
    expect(t.payment('shop.com')).toEqual({ status: 'succeeded', amount: 4320 })
  })

  it('refuses a taken name and one of ours (being registered or registered) on domain; a .ca needs its legal type', async () => {
    const t = setup()
    const p = t.who()
    expect(await refusal(() => t.register(p, 'taken.com'))).toEqual({ kind: 'conflict', field: 'domain' })
    await t.register(p, 'shop.com')
    expect(await refusal(() => t.register(t.who(), 'shop.com'))).toEqual({ kind: 'conflict', field: 'domain' })
    await t.job.run(t.repo.findByName('shop.com')!.id)
    expect(await refusal(() => t.register(p, 'shop.com'))).toEqual({ kind: 'conflict', field: 'domain' })
    expect(await refusal(() => t.register(p, 'shop.ca'))).toEqual({ kind: 'invalid', field: 'ca_legal_type' })
    expect((await t.domains.register(p, { domain: 'shop.ca', period: 1, contact, ca_legal_type: 'CCO' })).status).toBe('pending')
  })

  it('needs a payment method on file for a paid registration (402), and registers nothing', async () => {
    const t = setup()
    expect(await refusal(() => t.register(t.who(null), 'shop.com'))).toEqual({ kind: 'payment_declined', field: null })
    expect(t.repo.findByName('shop.com')).toBeUndefined()
    expect(t.queued).toEqual([])
  })

  it('gives an annual plan with free_domain_annual its first domain’s first year free, once; not a monthly one', async () => {
    const t = setup()
    const monthly = t.who()
    t.subscribe(monthly, 'business', 'monthly')
    expect((await t.domains.search(monthly, 'a.com')).first_year_free).toBe(false)
    const annual = t.who(null)
    t.subscribe(annual, 'business', 'annual')
    expect((await t.domains.search(annual, 'a.com')).first_year_free).toBe(true)
    // Free for one year without a card; a second year would be paid.
    expect(await t.register(annual, 'free.com')).toMatchObject({ charged: 0 })
    expect(t.payment('free.com')).toBeNull()
    expect((await t.domains.search(annual, 'b.com')).first_year_free).toBe(false)
    const starter = t.who()
    t.subscribe(starter, 'starter', 'annual')
    expect((await t.domains.search(starter, 'a.com')).first_year_free).toBe(false)
    const twoYears = t.who()
    t.subscribe(twoYears, 'business', 'annual')
    expect(await t.register(twoYears, 'two.com', 2)).toMatchObject({ charged: 21.6 })
  })

  it('a registration the registrar refuses is refunded and failed; the name is free again and a new attempt is charged anew', async () => {
    const t = setup()
    const p = t.who()
    await t.register(p, 'funds-shop.com')
    const failed = t.repo.findByName('funds-shop.com')!
    await t.job.run(failed.id)
    expect(t.domains.get(p, 'funds-shop.com')).toMatchObject({ status: 'failed', error: expect.stringContaining('could not take payment') })
    expect(t.payment('funds-shop.com')).toEqual({ status: 'refunded', amount: 2160 })
    expect(t.refunded).toHaveLength(1)
    expect(t.dnsRemoved).toEqual(['funds-shop.com'])
    expect((await t.domains.search(p, 'funds-shop.com')).available).toBe(true)
    expect(await refusal(() => t.domains.link(p, 'funds-shop.com', null))).toEqual({ kind: 'conflict', field: 'domain_name' })
    await t.register(p, 'funds-shop.com')
    const again = t.repo.findByName('funds-shop.com')!
    expect(again.id).not.toBe(failed.id)
    expect(t.repo.find(failed.id)).toBeUndefined()
    expect(t.charged.map((c) => c.idempotencyKey)).toEqual([`domain-register:funds-shop.com:${failed.id}`])
  })

  it('a declined card fails the registration without registering anything', async () => {
    const t = setup()
    const p = t.who('pm_card_visa_chargeDeclined')
    await t.register(p, 'shop.com')
    await t.job.run(t.repo.findByName('shop.com')!.id)
    expect(t.domains.get(p, 'shop.com')).toMatchObject({ status: 'failed', error: expect.stringContaining('declined') })
    expect(await t.registrar.find('shop.com')).toBeNull()
    expect(t.payment('shop.com')).toEqual({ status: 'failed', amount: 2160 })
  })
})

describe('links and settings', () => {
  async function active(t: ReturnType<typeof setup>, p: Principal, name: string) {
    await t.register(p, name)
    await t.job.run(t.repo.findByName(name)!.id)
  }

  it('links a domain to one of the account’s sites and unlinks it; another’s site or a deleted one is invalid on tenant_slug', async () => {
    const t = setup()
    const p = t.who()
    await active(t, p, 'shop.com')
    t.site(p, 'mine')
    expect(t.domains.link(p, 'shop.com', 'mine').linked_site).toBe('mine')
    expect(t.domains.list(p).map((d) => [d.domain, d.linked_site])).toEqual([['shop.com', 'mine']])
    const stranger = t.who()
    t.site(stranger, 'theirs')
    expect(await refusal(() => t.domains.link(p, 'shop.com', 'theirs'))).toEqual({ kind: 'invalid', field: 'tenant_slug' })
    t.store.sqlite.run("UPDATE sites SET status = 'deleted' WHERE slug = 'mine'")
    expect(await refusal(() => t.domains.link(p, 'shop.com', 'mine'))).toEqual({ kind: 'invalid', field: 'tenant_slug' })
    expect(t.domains.link(p, 'shop.com', null).linked_site).toBeNull()
  })

  it('hides another account’s domain and answers a malformed name as not found, on domain_name', async () => {
    const t = setup()
    const p = t.who()
    await active(t, p, 'shop.com')
    const stranger = t.who()
    expect(await refusal(() => t.domains.get(stranger, 'shop.com'))).toEqual({ kind: 'not_found', field: 'domain_name' })
    expect(await refusal(() => t.domains.link(stranger, 'shop.com', null))).toEqual({ kind: 'not_found', field: 'domain_name' })
    expect(await refusal(() => t.domains.get(p, 'not a name'))).toEqual({ kind: 'not_found', field: 'domain_name' })
    expect(t.domains.get(p, 'SHOP.com.').domain).toBe('shop.com')
  })

  it('a domain recorded before it became one of Berth’s names can be unlinked, but not linked or given records', async () => {
    const t = setup()
    const p = t.who()
    await active(t, p, 'shop.com')
    t.store.sqlite.run("UPDATE domains SET name = 'old.sites.test' WHERE name = 'shop.com'")
    t.site(p, 'mine')
    expect(await refusal(() => t.domains.link(p, 'old.sites.test', 'mine'))).toEqual({ kind: 'invalid', field: 'domain_name' })
    expect(await refusal(() => t.domains.addDns(p, 'old.sites.test', { type: 'A', name: '@', value: '192.0.2.1' } as never))).toEqual({ kind: 'invalid', field: 'domain_name' })
    expect(t.domains.link(p, 'old.sites.test', null).linked_site).toBeNull()
  })

  it('sends lock and privacy to the registrar (auto-renew is Berth’s own), not for a pending domain; needs one setting', async () => {
    const t = setup()
    const p = t.who()
    await t.register(p, 'wait.com')
    expect(await t.domains.settings(p, 'wait.com', { locked: false })).toMatchObject({ status: 'pending', locked: false })
    await active(t, p, 'shop.com')
    expect(await t.domains.settings(p, 'shop.com', { auto_renew: false })).toMatchObject({ auto_renew: false, locked: true, privacy: true })
    expect(t.settingsSent).toEqual([])
    expect(await t.domains.settings(p, 'shop.com', { privacy: false })).toMatchObject({ auto_renew: false, privacy: false })
    expect(t.settingsSent).toEqual(['shop.com'])
    expect(await refusal(() => t.domains.settings(p, 'shop.com', {}))).toEqual({ kind: 'invalid', field: null })
    t.setReachable(false)
    expect(await refusal(() => t.domains.settings(p, 'shop.com', { locked: false }))).toEqual({ kind: 'unavailable', field: null })
    expect(t.domains.get(p, 'shop.com').locked).toBe(true)
  })
})

it('turns each registrar error into the domain’s: taken 409, invalid 422 on its field, funds 402, unknown 404, unreachable 503', () => {
  const mapped = (['taken', 'invalid', 'funds', 'not_found', 'unreachable'] as const).map((kind) => {
    const e = registrarError(new RegistrarError(kind, 'x', kind === 'invalid' ? 'contact.phone' : null))
    return [e.kind, e.field]
  })
  expect(mapped).toEqual([['conflict', 'domain'], ['invalid', 'contact.phone'], ['payment_declined', null], ['not_found', 'domain_name'], ['unavailable', null]])
})

/**
 * domain.registered and domain.renewal_failed (issue 41): recorded in the write of the change,
 * holding the domain's view; with them, the payments' own events.
 */
const DAY = 86_400_000

describe('domain events', () => {
  it('domain.registered once the registration went through, after its payment.succeeded', async () => {
    const t = setup(120, { events: true })
    const p = t.who()
    await t.register(p, 'shop.com')
    await t.job.run(t.repo.findByName('shop.com')!.id)
    const events = t.eventsOf(p.accountId)
    expect(events.map((e) => e.type)).toEqual(['payment.succeeded', 'domain.registered'])
    expect(events[1]!.data).toMatchObject({ domain: 'shop.com', status: 'active', error: null, auto_renew: true })
    expect(events[1]!.data.expires_at).toEqual(expect.any(String))
  })

  it('a registration the registrar refuses records no domain.registered', async () => {
    const t = setup(120, { events: true })
    const p = t.who()
    await t.register(p, 'funds-shop.com')
    await t.job.run(t.repo.findByName('funds-shop.com')!.id)
    expect(t.eventsOf(p.accountId).map((e) => e.type)).toEqual(['payment.succeeded'])
  })

  it('domain.renewal_failed when the automatic renewal cannot be paid, with renew_error', async () => {
    const t = setup(120, { events: true })
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
