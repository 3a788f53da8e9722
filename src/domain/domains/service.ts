import type { PaymentProcessor } from '../../drivers/payments/types'
import { ProcessorUnavailableError } from '../../drivers/payments/types'
import { RegistrarError, type Contact, type Registrar } from '../../drivers/registrar/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { DomainRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { AccountsRepository } from '../accounts/repository'
import type { BillingRepository } from '../billing/repository'
import type { DnsService } from '../dns/service'
import type { RecordInput } from '../dns/records'
import type { DnsChangeView, DnsZone } from '../dns/views'
import { formatCad } from '../money'
import { conflict, DomainError, invalid, notFound, op, paymentDeclined, say, unavailable } from '../errors'
import type { Principal } from '../keys/service'
import type { PlansService } from '../plans/service'
import type { SitesRepository } from '../sites/repository'
import { NO_TLS, type TlsView } from '../tls/views'
import { isCa, normalizeDomain } from './names'
import type { DomainsRepository } from './repository'
import type { DomainRegisteredView, DomainSearchView, DomainView } from './views'

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
  processor: PaymentProcessor
  accounts: Pick<AccountsRepository, 'find'>
  billing: Pick<BillingRepository, 'activeSubscriptions' | 'insertPayment'>
  plans: Pick<PlansService, 'get'>
  sites: Pick<SitesRepository, 'findOwned' | 'find'>
  dns: DnsService
  nameservers: string[]
  /** What agents pay, as a percentage of the registrar's price. */
  pricePercent: number
  /** The domain's certificate (none while unlinked or without HTTPS). */
  tls?: (domainId: string) => TlsView
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
    const domain = normalizeDomain(raw)
    const quote = await this.registrar(() => this.d.registrar.search(domain))
    const ours = this.d.repo.findByName(domain)
    return {
      domain,
      available: quote.available && !ours,
      premium: quote.premium,
      price: { registration: this.price(quote.registerCents) / 100, renewal: this.price(quote.renewCents) / 100, currency: 'CAD' },
      first_year_free: this.freeFirstYear(p.accountId),
      sandbox: this.d.registrar.sandbox,
    }
  }

  async register(p: Principal, input: RegisterDomainInput): Promise<DomainRegisteredView> {
    const domain = normalizeDomain(input.domain)
    if (isCa(domain) && !input.ca_legal_type) throw invalid('ca_legal_type', 'A .ca domain needs ca_legal_type, the owner\'s CIRA legal type (CCO for a Canadian corporation, CCT for a Canadian citizen, RES for a permanent resident, ...).')
    if (this.d.repo.findByName(domain)) throw conflict(say`${domain} is already registered; ${op('searchDomains')} tells which names are free.`, 'domain')
    const quote = await this.registrar(() => this.d.registrar.search(domain))
    if (!quote.available) throw conflict(say`${domain} is taken; ${op('searchDomains')} tells which names are free.`, 'domain')
    const yearly = this.price(quote.registerCents)
    const free = this.freeFirstYear(p.accountId)
    const amount = yearly * input.period - (free ? yearly : 0)
    const account = this.d.accounts.find(p.accountId)!
    if (amount > 0 && !account.paymentMethodId) {
      throw paymentDeclined(say`No payment method on file to pay ${formatCad(amount)} for ${domain}: add one through ${op('getBillingPortal')}, or pay a checkout with processor_payment_method (${op('createCheckout')}). Nothing was registered.`, null)
    }
    const charge = amount > 0 ? await this.charge(account, amount, `Domain ${domain}, ${input.period} year${input.period > 1 ? 's' : ''}`, domain) : null
    let registered
    try {
      registered = await this.registrar(() => this.d.registrar.register({
        domain, periodYears: input.period, contact: input.contact, caLegalType: isCa(domain) ? input.ca_legal_type : undefined,
        nameservers: this.d.nameservers, autoRenew: true, privacy: true, locked: true,
      }))
    } catch (err) {
      if (charge) await this.refund(charge.paymentRef, amount, `registration of ${domain} failed`)
      throw err
    }
    const now = this.d.clock.now()
    const row = this.d.store.write(() => {
      if (charge) {
        this.d.billing.insertPayment({
          id: crypto.randomUUID(), accountId: p.accountId, checkoutId: null, subscriptionId: null, amountCents: amount, currency: 'cad', status: 'succeeded',
          processor: charge.processor, processorRef: charge.paymentRef, methodLabel: charge.methodLabel, testMode: charge.testMode, createdAt: now,
          kind: 'domain', description: `Domain ${domain}, registration for ${input.period} year${input.period > 1 ? 's' : ''}`,
        })
      }
      return this.d.repo.insert({
        id: crypto.randomUUID(), accountId: p.accountId, name: domain, status: 'active', registrar: this.d.registrar.name, sandbox: this.d.registrar.sandbox,
        registrarRef: registered.registrarRef, expiresAt: registered.expiresAt, autoRenew: true, locked: true, privacy: true,
        nameservers: JSON.stringify(this.d.nameservers), siteId: null, renewCents: this.price(quote.renewCents), freeFirstYear: free,
        contact: JSON.stringify(input.contact), caLegalType: isCa(domain) ? input.ca_legal_type! : null, renewError: null, createdAt: now, updatedAt: now,
      })
    })
    this.d.log.info('domain registered', { domain, account: p.accountId, charged_cents: amount, registrar: this.d.registrar.name })
    return { ...this.view(row), charged: amount / 100 }
  }

  list(p: Principal): DomainView[] {
    return this.d.repo.listOwned(p.accountId).map((d) => this.view(d))
  }

  get(p: Principal, name: string): DomainView {
    return this.view(this.owned(p, name))
  }

  dns(p: Principal, name: string): DnsZone {
    return this.d.dns.domainZone(this.owned(p, name))
  }

  addDns(p: Principal, name: string, input: RecordInput): DnsChangeView {
    return this.d.dns.addToDomain(this.owned(p, name), input)
  }

  removeDns(p: Principal, name: string, input: RecordInput): DnsChangeView {
    return this.d.dns.removeFromDomain(this.owned(p, name), input)
  }

  /** Routes the domain and its www to one of the account's sites; null unlinks. */
  link(p: Principal, name: string, slug: string | null): DomainView {
    const domain = this.owned(p, name)
    let siteId: string | null = null
    if (slug !== null) {
      const site = this.d.sites.findOwned(p.accountId, slug)
      // A site named in the body: a wrong field (422), another account's alike (docs/api.md).
      if (!site || site.status === 'deleted') throw invalid('tenant_slug', say`No site '${slug}' in your account; ${op('listSites')} lists your sites.`)
      siteId = site.id
    }
    const row = this.d.store.write(() => this.d.repo.update(domain.id, { siteId, updatedAt: this.d.clock.now() }))
    return this.view(row)
  }

  async settings(p: Principal, name: string, input: DomainSettingsInput): Promise<DomainView> {
    const domain = this.owned(p, name)
    const changes = { autoRenew: input.auto_renew, locked: input.locked, privacy: input.privacy }
    if (Object.values(changes).every((v) => v === undefined)) throw invalid(null, 'Send at least one of auto_renew, locked and privacy (booleans).')
    // The registrar holds lock and privacy; auto-renew is Berth's own renewal job.
    if (input.locked !== undefined || input.privacy !== undefined) {
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

  view(d: DomainRow): DomainView {
    return {
      domain: d.name,
      status: d.status,
      expires_at: new Date(d.expiresAt).toISOString(),
      auto_renew: d.autoRenew,
      locked: d.locked,
      privacy: d.privacy,
      nameservers: JSON.parse(d.nameservers) as string[],
      linked_site: d.siteId ? (this.d.sites.find(d.siteId)?.slug ?? null) : null,
      renewal_price: d.renewCents / 100,
      registrar: d.registrar,
      sandbox: d.sandbox,
      tls: this.d.tls?.(d.id) ?? NO_TLS,
      renew_error: d.renewError,
      created_at: new Date(d.createdAt).toISOString(),
    }
  }

  /** The registrar's price in agents' CAD cents. */
  price(cents: number): number {
    return Math.round((cents * this.d.pricePercent) / 100)
  }

  /** True when the account's next domain is free for a year (annual plan with free_domain_annual, none used yet). */
  freeFirstYear(accountId: string): boolean {
    const eligible = this.d.billing.activeSubscriptions(accountId).some((s) => s.billingPeriod === 'annual' && this.d.plans.get(s.planSlug).features.free_domain_annual)
    return eligible && this.d.repo.countFree(accountId) === 0
  }

  registrarDriver(): Registrar {
    return this.d.registrar
  }

  /** Charges the method on file; a decline is 402 with nothing registered. */
  async charge(account: { paymentMethodId: string | null; processorCustomerRef: string | null }, amountCents: number, description: string, domain: string, idempotencyKey = `domain:${domain}:${crypto.randomUUID()}`) {
    let result
    try {
      result = await this.d.processor.charge({
        reference: `domain:${domain}`, idempotencyKey, amountCents, currency: 'cad', paymentMethodId: account.paymentMethodId!, description, customerRef: account.processorCustomerRef, offSession: true,
      })
    } catch (err) {
      if (err instanceof ProcessorUnavailableError) throw unavailable('The payment processor cannot be reached; nothing was charged or registered. Retry in a minute.')
      throw err
    }
    if (!result.ok) throw paymentDeclined(say`The payment method on file was declined (${result.message}) for ${formatCad(amountCents)}; nothing was registered. Replace the card on file through ${op('getBillingPortal')} and retry.`, null)
    return { ...result, processor: this.d.processor.name, testMode: this.d.processor.testMode }
  }

  async refund(paymentRef: string, amountCents: number, reason: string): Promise<void> {
    try {
      await this.d.processor.refund({ paymentRef, amountCents, reason })
    } catch (err) {
      this.d.log.error('refund after a failed domain registration failed; refund it by hand', { payment: paymentRef, amount_cents: amountCents, error: (err as Error).message })
    }
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

export function registrarError(err: RegistrarError): DomainError {
  switch (err.kind) {
    case 'taken':
      return conflict(`${err.message} Search another name.`, 'domain')
    case 'invalid':
      return invalid(err.param, `The registry refused the registration: ${err.message}`)
    case 'funds':
      return paymentDeclined(`The registrar could not take payment for this registration (${err.message}); nothing was registered and any charge was refunded. Retry later.`, null)
    case 'not_found':
      return notFound(`The registrar does not know this domain: ${err.message}`, 'domain_name')
    case 'unreachable':
      return unavailable(`The domain registrar is not answering (${err.message}); nothing changed. Retry in a minute.`)
  }
}

function safeName(raw: string): string | null {
  try {
    return normalizeDomain(raw, 'domain_name')
  } catch {
    return null
  }
}

