import { RegistrarError, type Contact, type RegisteredDomain, type Registrar } from '../../drivers/registrar/types'
import type { JobHandler } from '../../jobs/runner'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { DomainRow, PaymentRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { AccountLookup } from './ports'
import type { BillingRecords, Charges } from '../billing'
import type { DnsService } from '../dns'
import { formatCad } from '../../core/money'
import type { DomainsRepository } from './repository'
import { registrarError } from './registrar-errors'
import type { DomainEvents } from './domain-events'

export const REGISTER_DOMAIN_JOB = 'register_domain'

/** The idempotency key of a registration's payment: the name and the attempt (its row). */
export const registrationKey = (d: Pick<DomainRow, 'id' | 'name'>) => `domain-register:${d.name}:${d.id}`

/**
 * The registration job (subject: the domain id, `pending`): pays, registers, and records.
 *
 * 1. The pending payment (written with the domain) is charged with its key and settled; a
 *    decline fails the registration (nothing registered, nothing charged).
 * 2. The registration is sent to the registrar, once: the send is recorded first, and a job run
 *    again after a stop asks the registrar (`find`) whether it went through before sending again.
 * 3. The domain becomes `active` with the registrar's expiry.
 *
 * A refusal by the registrar (taken, a field, its funds) refunds the payment and fails the
 * domain with the reason; an unreachable registrar or processor is retried by the job runner,
 * and after the last attempt the payment is refunded. The refund comes before the domain is
 * marked failed, so a stop between the two refunds again (the processor refunds once).
 */
export class DomainRegistration implements JobHandler {
  attempts = 5

  constructor(private d: {
    store: Store
    clock: Clock
    log: Logger
    repo: DomainsRepository
    registrar: Registrar
    charges: Pick<Charges, 'collect' | 'settle' | 'refund'>
    billing: Pick<BillingRecords, 'paymentByKey'>
    accounts: AccountLookup
    dns: Pick<DnsService, 'removeAllOfDomain'>
    /** Records `domain.registered` with the domain's view (./domain-events.ts), in the write that makes it active. */
    events?: Pick<DomainEvents, 'record'>
  }) {}

  async run(domainId: string): Promise<void> {
    const domain = this.d.repo.find(domainId)
    if (!domain || domain.status !== 'pending') return
    if (domain.error) return this.fail(domain, domain.error)
    const payment = this.d.billing.paymentByKey(registrationKey(domain))
    if (payment && !(await this.pay(domain, payment))) return
    const registered = await this.send(domain)
    if (!registered) return
    const now = this.d.clock.now()
    this.d.store.write(() => this.registered(this.d.repo.update(domain.id, { status: 'active', registrarRef: registered.registrarRef, expiresAt: registered.expiresAt, error: null, updatedAt: now })))
    this.d.log.info('domain registered', { domain: domain.name, account: domain.accountId, charged_cents: payment?.amountCents ?? 0, registrar: this.d.registrar.name })
  }

  /** After the last attempt (the registrar or processor kept failing): refund, and say why. */
  async failed(domainId: string, error: string): Promise<void> {
    const domain = this.d.repo.find(domainId)
    if (!domain || domain.status !== 'pending') return
    if (domain.registerSentAt) {
      const held = await this.d.registrar.find(domain.name).catch(() => null)
      if (held) {
        this.d.store.write(() => this.registered(this.d.repo.update(domain.id, { status: 'active', registrarRef: held.registrarRef, expiresAt: held.expiresAt, error: null, updatedAt: this.d.clock.now() })))
        return
      }
      this.d.log.error('a registration sent to the registrar could not be confirmed; check the registrar by hand', { domain: domain.name, error })
    }
    await this.fail(domain, `The registration could not be completed (${error}); nothing was registered and any charge was refunded. Register again later.`, { refundOrThrow: false })
  }

  private registered(domain: DomainRow | undefined): void {
    if (domain) this.d.events?.record('domain.registered', domain)
  }

  /** Charges the registration's payment (again, with its key, after a stop). False when it cannot be paid. */
  private async pay(domain: DomainRow, payment: PaymentRow): Promise<boolean> {
    if (payment.status === 'pending') {
      const account = this.d.accounts.find(domain.accountId)
      const result = await this.d.charges.collect(payment, { reference: `domain:${domain.name}`, customerRef: account?.processorCustomerRef, offSession: true })
      const settled = this.d.charges.settle(payment.id, result)
      if (settled.status === 'failed') {
        await this.fail(domain, `The payment method on file was declined (${settled.failureMessage}) for ${formatCad(payment.amountCents)}; nothing was registered. Replace the card through the billing portal and register again.`)
        return false
      }
      return true
    }
    if (payment.status === 'succeeded') return true
    await this.fail(domain, `The registration's payment is ${payment.status}; nothing was registered. Register again.`)
    return false
  }

  /** Sends the registration once; null when the registrar refused it (the domain is failed). */
  private async send(domain: DomainRow): Promise<RegisteredDomain | null> {
    if (domain.registerSentAt) {
      const held = await this.registrarCall(() => this.d.registrar.find(domain.name))
      if (held) return held
    }
    this.d.store.write(() => this.d.repo.update(domain.id, { registerSentAt: this.d.clock.now(), updatedAt: this.d.clock.now() }))
    try {
      return await this.d.registrar.register({
        domain: domain.name, periodYears: domain.periodYears, contact: JSON.parse(domain.contact) as Contact, caLegalType: domain.caLegalType ?? undefined,
        nameservers: JSON.parse(domain.nameservers) as string[], autoRenew: true, privacy: domain.privacy, locked: domain.locked,
      })
    } catch (err) {
      if (!(err instanceof RegistrarError) || err.kind === 'unreachable') throw err
      await this.fail(domain, registrarError(err).message)
      return null
    }
  }

  private async registrarCall<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (err) {
      if (err instanceof RegistrarError) throw new Error(registrarError(err).message)
      throw err
    }
  }

  /**
   * The registration fails with `reason`: kept on the row first, then the payment refunded,
   * then the domain `failed` (a stop in between comes back here through `run`).
   */
  private async fail(domain: DomainRow, reason: string, o = { refundOrThrow: true }): Promise<void> {
    this.d.store.write(() => this.d.repo.update(domain.id, { error: reason, updatedAt: this.d.clock.now() }))
    const payment = this.d.billing.paymentByKey(registrationKey(domain))
    // A refund the processor refuses is retried with the job; after its last attempt it is
    // logged for the hoster (Charges.refund) and the domain fails all the same.
    const refunded = payment?.status !== 'succeeded' || (await this.d.charges.refund(payment.id, `registration of ${domain.name} failed: ${reason}`))
    if (!refunded && o.refundOrThrow) throw new Error(`the refund for ${domain.name} failed; it is tried again`)
    this.d.store.write(() => {
      this.d.dns.removeAllOfDomain(domain)
      this.d.repo.update(domain.id, { status: 'failed', siteId: null, error: reason, updatedAt: this.d.clock.now() })
    })
    this.d.log.warn('domain registration failed', { domain: domain.name, account: domain.accountId, reason })
  }
}
