import { RegistrarError, type Contact, type Registrar } from '../../drivers/registrar/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { DomainRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { AccountLookup } from './ports'
import type { DnsChangeView, DnsService, DnsZone, RecordInput } from '../dns'
import { formatCad } from '../../core/money'
import { conflict, invalid, notFound, op, paymentDeclined, say } from '../errors'
import type { JobRunner } from '../../jobs/runner'
import type { BillingRecords, Charges } from '../billing'
import type { BerthNames } from '../berth-names'
import type { Principal } from '../keys'
import type { PlansService } from '../plans'
import { NO_TLS, type TlsView } from '../tls'
import { isCa, normalizeDomain } from './names'
import { REGISTER_DOMAIN_JOB, registrationKey } from './registration'
import { registrarError } from './registrar-errors'
import type { DomainsRepository } from './repository'
import type { DomainRegisteredView, DomainSearchView, DomainView } from './views'
import type { SiteRecords } from '../sites'

export interface RegisterDomainInput {
  domain: string
  period: number
  ca_legal_type?: string
  contact: Contact
}

export interface DomainSettingsInput {
  auto_renew?: boolean
  locked?: boolean
  privacy?: boolean
}

interface Deps {
  store: Store
  clock: Clock
  log: Logger
  repo: DomainsRepository
  registrar: Registrar
  /** The charge of a registration, and the subscriptions whose plans include a free first year. */
  money: { charges: Pick<Charges, 'open'>; billing: Pick<BillingRecords, 'activeSubscriptions'>; plans: Pick<PlansService, 'get'> }
  jobs: Pick<JobRunner, 'enqueue' | 'kick'>
  accounts: AccountLookup
  sites: Pick<SiteRecords, 'findOwned' | 'find' | 'slugsOf'>
  dns: DnsService
  terms: DomainTerms
  /** The domains' certificates by domain id, in one read (none while unlinked or without HTTPS). */
  tls?: (domainIds: string[]) => Map<string, TlsView>
}

/** The hoster's terms for tenants' domains (config sections dns and registrar). */
export interface DomainTerms {
  /** Where a registered domain's delegation points: Berth's nameservers. */
  nameservers: string[]
  /** Berth's own names (sites.domain, the site_url host, the nameservers): never a tenant's domain. */
  berthNames: Pick<BerthNames, 'domainProblem'>
  /** What agents pay, as a percentage of the registrar's price. */
  pricePercent: number
}

/**
 * Domains (spec part 4, design.md DNS, domains, TLS): search with CAD prices, registration paid
 * with the account's payment method on file (the first domain's first year free on an annual
 * plan with free_domain_annual), DNS records, linking to a site (the edge routes the domain and
 * its www), settings. Another account's domain is not found.
 */
export class DomainsService {
  constructor(private d: Deps) {}

  async search(p: Principal, raw: string): Promise<DomainSearchView> {
    const domain = this.tenantName(raw, 'domain')
    const quote = await this.registrar(() => this.d.registrar.search(domain))
    const ours = this.d.repo.findByName(domain)
    return {
      domain,
      // A failed registration holds nothing: its name is free to register again.
      available: quote.available && (!ours || ours.status === 'failed'),
      premium: quote.premium,
      price: { registration: this.price(quote.registerCents) / 100, renewal: this.price(quote.renewCents) / 100, currency: 'CAD' },
      first_year_free: this.freeFirstYear(p.accountId),
      sandbox: this.d.registrar.sandbox,
    }
  }

  /**
   * Starts a registration and answers at once: the name's availability and price are asked of
   * the registrar (a lookup), then, in one transaction, the domain is recorded `pending`, its
   * payment recorded pending with a key derived from the attempt (`domain-register:<name>:<id>`),
   * and the registration job queued. The job charges, registers and settles
   * (`DomainRegistration`); the domain's status and `error` show how it went.
   */
  async register(p: Principal, input: RegisterDomainInput): Promise<DomainRegisteredView> {
    const domain = this.tenantName(input.domain, 'domain')
    if (isCa(domain) && !input.ca_legal_type) throw invalid('ca_legal_type', 'A .ca domain needs ca_legal_type, the owner\'s CIRA legal type (CCO for a Canadian corporation, CCT for a Canadian citizen, RES for a permanent resident, ...).')
    this.requireFree(domain)
    const quote = await this.registrar(() => this.d.registrar.search(domain))
    if (!quote.available) throw conflict(say`${domain} is taken; ${op('searchDomains')} tells which names are free.`, 'domain')
    const yearly = this.price(quote.registerCents)
    const free = this.freeFirstYear(p.accountId)
    const amount = yearly * input.period - (free ? yearly : 0)
    const account = this.d.accounts.find(p.accountId)!
    if (amount > 0 && !account.paymentMethodId) {
      throw paymentDeclined(say`No payment method on file to pay ${formatCad(amount)} for ${domain}: add one through ${op('getBillingPortal')}, or pay a checkout with processor_payment_method (${op('createCheckout')}). Nothing was registered.`, null)
    }
    const now = this.d.clock.now()
    const row = this.d.store.write(() => {
      // Checked again inside the transaction: two requests for one name make one registration.
      const failed = this.requireFree(domain)
      if (failed) this.forget(failed)
      const row = this.d.repo.insert({
        id: crypto.randomUUID(), accountId: p.accountId, name: domain, status: 'pending', registrar: this.d.registrar.name, sandbox: this.d.registrar.sandbox,
        registrarRef: '', expiresAt: 0, autoRenew: true, locked: true, privacy: true, periodYears: input.period,
        nameservers: JSON.stringify(this.d.terms.nameservers), siteId: null, renewCents: this.price(quote.renewCents), freeFirstYear: free,
        contact: JSON.stringify(input.contact), caLegalType: isCa(domain) ? input.ca_legal_type! : null, renewError: null, createdAt: now, updatedAt: now,
      })
      if (amount > 0) {
        this.d.money.charges.open({
          key: registrationKey(row), kind: 'domain', accountId: p.accountId, amountCents: amount, paymentMethodId: account.paymentMethodId!,
          description: `Domain ${domain}, registration for ${input.period} year${input.period > 1 ? 's' : ''}`,
        })
      }
      this.d.jobs.enqueue(REGISTER_DOMAIN_JOB, row.id)
      return row
    })
    this.d.jobs.kick()
    this.d.log.info('domain registration queued', { domain, account: p.accountId, amount_cents: amount, registrar: this.d.registrar.name })
    return { ...this.view(row), charged: amount / 100 }
  }

  /**
   * `raw` as a normalized name a tenant may hold; invalid on `param` when it is malformed or one
   * of Berth's own names (equal to, under or above sites.domain, the site_url host or a
   * nameserver: issue 23, part 6).
   */
  private tenantName(raw: string, param: string): string {
    const domain = normalizeDomain(raw, param)
    this.requireTenants(domain, param)
    return domain
  }

  /** Invalid on `param` when `domain` is one of Berth's own names, or above or under one. */
  private requireTenants(domain: string, param: string): void {
    const problem = this.d.terms.berthNames.domainProblem(domain)
    if (problem) throw invalid(param, say`${problem} Choose a name of your own (${op('searchDomains')} tells which are free).`)
  }

  /**
   * Conflict when `name` is ours already (registered or being registered); a failed
   * registration's row is returned, to be replaced.
   */
  private requireFree(name: string): DomainRow | null {
    const existing = this.d.repo.findByName(name)
    if (!existing || existing.status === 'failed') return existing ?? null
    if (existing.status === 'pending') throw conflict(say`${name} is being registered; ${op('getDomain', { domain_name: name })} shows when it is active.`, 'domain')
    throw conflict(say`${name} is already registered; ${op('searchDomains')} tells which names are free.`, 'domain')
  }

  /** Removes a failed registration's row and whatever was attached to it meanwhile. */
  private forget(failed: DomainRow): void {
    this.d.dns.removeAllOfDomain(failed)
    this.d.repo.remove(failed.id)
  }

  /** The account's domains; linked sites and certificates are read once for the whole list. */
  list(p: Principal): DomainView[] {
    const rows = this.d.repo.listOwned(p.accountId)
    const around = this.surroundings(rows)
    return rows.map((d) => this.view(d, around))
  }

  get(p: Principal, name: string): DomainView {
    return this.view(this.owned(p, name))
  }

  dns(p: Principal, name: string): DnsZone {
    return this.d.dns.domainZone(this.owned(p, name))
  }

  addDns(p: Principal, name: string, input: RecordInput): DnsChangeView {
    const domain = this.changeable(p, name)
    // A domain recorded before Berth's names were refused (or before the hoster's config named
    // it) keeps its row, so that it can be unlinked and its records deleted, but gets no new ones.
    this.requireTenants(domain.name, 'domain_name')
    return this.d.dns.addToDomain(domain, input)
  }

  removeDns(p: Principal, name: string, input: RecordInput): DnsChangeView {
    return this.d.dns.removeFromDomain(this.changeable(p, name), input)
  }

  /** Routes the domain and its www to one of the account's sites; null unlinks. */
  link(p: Principal, name: string, slug: string | null): DomainView {
    const domain = this.changeable(p, name)
    let siteId: string | null = null
    if (slug !== null) {
      this.requireTenants(domain.name, 'domain_name')
      const site = this.d.sites.findOwned(p.accountId, slug)
      // A site named in the body: a wrong field (422), another account's alike (docs/api.md).
      if (!site || site.status === 'deleted') throw invalid('tenant_slug', say`No site '${slug}' in your account; ${op('listSites')} lists your sites.`)
      siteId = site.id
    }
    const row = this.d.store.write(() => this.d.repo.update(domain.id, { siteId, updatedAt: this.d.clock.now() }))
    return this.view(row)
  }

  async settings(p: Principal, name: string, input: DomainSettingsInput): Promise<DomainView> {
    const domain = this.changeable(p, name)
    const changes = { autoRenew: input.auto_renew, locked: input.locked, privacy: input.privacy }
    if (Object.values(changes).every((v) => v === undefined)) throw invalid(null, 'Send at least one of auto_renew, locked and privacy (booleans).')
    // The registrar holds lock and privacy; auto-renew is Berth's own renewal job. A pending
    // domain is registered with what its row says when the job gets to it.
    if (domain.status !== 'pending' && (input.locked !== undefined || input.privacy !== undefined)) {
      await this.registrar(() => this.d.registrar.updateSettings(domain.name, { locked: input.locked, privacy: input.privacy }))
    }
    const set = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined))
    const row = this.d.store.write(() => this.d.repo.update(domain.id, { ...set, updatedAt: this.d.clock.now() }))
    return this.view(row)
  }

  /** The account's domain, or not_found (another account's included: never confirm it exists). */
  owned(p: Principal, raw: string): DomainRow {
    const name = safeName(raw)
    const row = name === null ? undefined : this.d.repo.findOwned(p.accountId, name)
    if (!row) throw notFound(say`No domain '${raw}' in your account; ${op('listDomains')} lists yours and ${op('registerDomain')} registers one.`, 'domain_name')
    return row
  }

  /**
   * The account's domain, for a change: DNS records, links and settings of a pending domain
   * are kept and apply once it is registered; a failed registration is conflict.
   */
  private changeable(p: Principal, raw: string): DomainRow {
    const row = this.owned(p, raw)
    if (row.status === 'failed') throw conflict(say`The registration of ${row.name} failed (${row.error ?? 'see its error'}); ${op('registerDomain')} tries again.`, 'domain_name')
    return row
  }

  view(d: DomainRow, around = this.surroundings([d])): DomainView {
    return {
      domain: d.name,
      status: d.status,
      error: d.error,
      expires_at: d.status === 'pending' || d.status === 'failed' ? null : new Date(d.expiresAt).toISOString(),
      auto_renew: d.autoRenew,
      locked: d.locked,
      privacy: d.privacy,
      nameservers: JSON.parse(d.nameservers) as string[],
      linked_site: d.siteId ? (around.slugs.get(d.siteId) ?? null) : null,
      renewal_price: d.renewCents / 100,
      registrar: d.registrar,
      sandbox: d.sandbox,
      tls: around.tls?.get(d.id) ?? NO_TLS,
      renew_error: d.renewError,
      created_at: new Date(d.createdAt).toISOString(),
    }
  }

  /** What domains' views show of other records (linked sites' slugs, certificates), each in one read. */
  private surroundings(rows: DomainRow[]): { slugs: Map<string, string>; tls: Map<string, TlsView> | undefined } {
    const linked = rows.flatMap((d) => (d.siteId ? [d.siteId] : []))
    return { slugs: this.d.sites.slugsOf(linked), tls: this.d.tls?.(rows.map((d) => d.id)) }
  }

  /** The registrar's price in agents' CAD cents. */
  price(cents: number): number {
    return Math.round((cents * this.d.terms.pricePercent) / 100)
  }

  /** True when the account's next domain is free for a year (annual plan with free_domain_annual, none used yet). */
  freeFirstYear(accountId: string): boolean {
    const eligible = this.d.money.billing.activeSubscriptions(accountId).some((s) => s.billingPeriod === 'annual' && this.d.money.plans.get(s.planSlug).features.free_domain_annual)
    return eligible && this.d.repo.countFree(accountId) === 0
  }

  registrarDriver(): Registrar {
    return this.d.registrar
  }

  /** Runs a registrar call, turning its errors into the domain's (409, 422, 402, 503, 404). */
  async registrar<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      if (!(err instanceof RegistrarError)) throw err
      throw registrarError(err)
    }
  }
}

function safeName(raw: string): string | null {
  try {
    return normalizeDomain(raw, 'domain_name')
  } catch {
    return null
  }
}

