/**
 * A domain registrar. The embedded default is the sandbox registrar (recorded locally, marked
 * sandbox everywhere); OpenSRS is the real one (its XML API; design.md, The embedded default).
 *
 * Contracts, for every implementation:
 * - Names are lower-case ASCII (A-labels), without a trailing dot; the caller has checked syntax.
 * - Prices are integer CAD cents, for one year; `register` and `renew` take a period in years.
 * - Errors are RegistrarError with a kind: `taken` (the name cannot be registered: 409),
 *   `invalid` (the registry refused a field: 422 on `param`), `funds` (the reseller account cannot
 *   pay: 402), `unreachable` (the registrar did not answer: 503, nothing changed), `not_found`
 *   (the registrar does not know the domain). Never classified by message text by the caller.
 * - `register` is not idempotent at the registry: the caller records an attempt before calling
 *   and never retries a register blindly (it asks `find` first). `renew`, `setNameservers` and `updateSettings` are
 *   idempotent for the same input (a renew carries the current expiry, as registries require).
 */
export interface Registrar {
  /** `sandbox` or `opensrs`. */
  readonly name: string
  /** True when nothing is registered for real (the sandbox); shown in every domain view. */
  readonly sandbox: boolean
  search(domain: string): Promise<DomainQuote>
  register(input: RegisterInput): Promise<RegisteredDomain>
  /**
   * The domain as this reseller account holds it, or null when the registrar does not hold it
   * for us (free, or another's). Read-only. How a registration interrupted by a stop learns
   * whether it went through, and a renewal whether the registry already extended the expiry.
   */
  find(domain: string): Promise<RegisteredDomain | null>
  renew(input: { domain: string; periodYears: number; currentExpiry: number }): Promise<{ expiresAt: number }>
  setNameservers(domain: string, nameservers: string[]): Promise<void>
  updateSettings(domain: string, settings: { autoRenew?: boolean; locked?: boolean; privacy?: boolean }): Promise<void>
  /** The code (EPP auth info) another registrar needs to take the domain over. */
  transferOutCode(domain: string): Promise<string>
}

export interface DomainQuote {
  domain: string
  available: boolean
  premium: boolean
  /** CAD cents for one year of registration, and of renewal. */
  registerCents: number
  renewCents: number
}

/** WHOIS contact, as the hosting API takes it (phone `+1.5555551234`, country ISO 3166 alpha-2). */
export interface Contact {
  first_name: string
  last_name: string
  email: string
  phone: string
  address1: string
  city: string
  state: string
  postal_code: string
  country: string
}

export interface RegisterInput {
  domain: string
  periodYears: number
  contact: Contact
  /** CIRA legal type, for `.ca` names only. */
  caLegalType?: string
  nameservers: string[]
  autoRenew: boolean
  privacy: boolean
  locked: boolean
}

export interface RegisteredDomain {
  domain: string
  /** The registrar's id for the order or domain, kept for support. */
  registrarRef: string
  /** Epoch milliseconds. */
  expiresAt: number
}

export type RegistrarErrorKind = 'taken' | 'invalid' | 'funds' | 'unreachable' | 'not_found'

export class RegistrarError extends Error {
  constructor(readonly kind: RegistrarErrorKind, message: string, readonly param: string | null = null) {
    super(message)
  }
}
