import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { addYears, type Clock } from '../../lib/clock'
import { writePrivateFile } from '../../lib/private-file'
import { RegistrarError, type DomainQuote, type RegisterInput, type RegisteredDomain, type Registrar } from './types'

interface SandboxDomain {
  registrarRef: string
  expiresAt: number
  nameservers: string[]
  autoRenew: boolean
  locked: boolean
  privacy: boolean
  authCode: string
}

/** CAD cents per year, registration and renewal, by TLD; every other TLD costs DEFAULT_PRICE. */
const PRICES: Record<string, [number, number]> = {
  com: [1800, 1800],
  ca: [2000, 2000],
  net: [2000, 2200],
  org: [2200, 2200],
  io: [6500, 6500],
}
const DEFAULT_PRICE: [number, number] = [2500, 2500]
const PREMIUM_FACTOR = 10
const FAMOUS = new Set(['google', 'amazon', 'facebook', 'example', 'berth'])
const DAY_MS = 86_400_000

/**
 * The embedded registrar (design.md, The embedded default): nothing is registered for real; the
 * domains live in one JSON file in the data folder, and every view says `sandbox: true`.
 *
 * Names that behave differently on purpose, so agents can try every path:
 * - first label `taken` or `taken-*`, and google, amazon, facebook, example and berth under any
 *   TLD: always taken (search answers `available: false`, register 409);
 * - first label `premium-*`: premium, ten times the usual price;
 * - first label `funds-*`: registration fails as if the reseller account could not pay (402).
 * Every domain the sandbox registered is taken afterwards, across restarts.
 */
export class SandboxRegistrar implements Registrar {
  readonly name = 'sandbox'
  readonly sandbox = true
  private domains: Record<string, SandboxDomain>

  constructor(private o: { file: string; clock: Clock }) {
    this.domains = existsSync(o.file) ? (JSON.parse(readFileSync(o.file, 'utf8')) as Record<string, SandboxDomain>) : {}
  }

  async search(domain: string): Promise<DomainQuote> {
    const label = firstLabel(domain)
    const premium = label.startsWith('premium-')
    const [register, renew] = PRICES[tldOf(domain)] ?? DEFAULT_PRICE
    const factor = premium ? PREMIUM_FACTOR : 1
    return { domain, available: !this.taken(domain), premium, registerCents: register * factor, renewCents: renew * factor }
  }

  async register(input: RegisterInput): Promise<RegisteredDomain> {
    if (this.taken(input.domain)) throw new RegistrarError('taken', `${input.domain} is taken.`, 'domain')
    if (firstLabel(input.domain).startsWith('funds-')) throw new RegistrarError('funds', 'the sandbox reseller account has no funds (a funds-* name)')
    const domain: SandboxDomain = {
      registrarRef: `sandbox-${randomBytes(6).toString('hex')}`,
      expiresAt: addYears(this.o.clock.now(), input.periodYears),
      nameservers: input.nameservers,
      autoRenew: input.autoRenew,
      locked: input.locked,
      privacy: input.privacy,
      authCode: randomBytes(9).toString('base64url'),
    }
    this.save({ ...this.domains, [input.domain]: domain })
    return { domain: input.domain, registrarRef: domain.registrarRef, expiresAt: domain.expiresAt }
  }

  async find(domain: string): Promise<RegisteredDomain | null> {
    const d = this.domains[domain]
    return d ? { domain, registrarRef: d.registrarRef, expiresAt: d.expiresAt } : null
  }

  async renew(input: { domain: string; periodYears: number; currentExpiry: number }): Promise<{ expiresAt: number }> {
    const d = this.known(input.domain)
    // Registries refuse a renewal that names another expiry: it protects against renewing twice.
    if (Math.abs(d.expiresAt - input.currentExpiry) > DAY_MS) throw new RegistrarError('invalid', `the current expiry of ${input.domain} is ${new Date(d.expiresAt).toISOString()}, not ${new Date(input.currentExpiry).toISOString()}`, 'current_expiry')
    const expiresAt = addYears(d.expiresAt, input.periodYears)
    this.save({ ...this.domains, [input.domain]: { ...d, expiresAt } })
    return { expiresAt }
  }

  async setNameservers(domain: string, nameservers: string[]): Promise<void> {
    this.save({ ...this.domains, [domain]: { ...this.known(domain), nameservers } })
  }

  async updateSettings(domain: string, settings: { autoRenew?: boolean; locked?: boolean; privacy?: boolean }): Promise<void> {
    const defined = Object.fromEntries(Object.entries(settings).filter(([, v]) => v !== undefined))
    this.save({ ...this.domains, [domain]: { ...this.known(domain), ...defined } })
  }

  async transferOutCode(domain: string): Promise<string> {
    return this.known(domain).authCode
  }

  private taken(domain: string): boolean {
    const label = firstLabel(domain)
    return label === 'taken' || label.startsWith('taken-') || FAMOUS.has(label) || domain in this.domains
  }

  private known(domain: string): SandboxDomain {
    const d = this.domains[domain]
    if (!d) throw new RegistrarError('not_found', `the sandbox registrar has no domain ${domain}`, 'domain_name')
    return d
  }

  /** Writes the whole state to a temporary file and renames it over the old one (never half-written). */
  private save(next: Record<string, SandboxDomain>): void {
    writePrivateFile(this.o.file, JSON.stringify(next, null, 2))
    this.domains = next
  }
}

const firstLabel = (domain: string) => domain.slice(0, domain.indexOf('.'))
const tldOf = (domain: string) => domain.slice(domain.lastIndexOf('.') + 1)

