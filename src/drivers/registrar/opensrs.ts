import { createHash, randomBytes } from 'node:crypto'
import { addYears } from '../../lib/clock'
import { decodeEnvelope, encodeEnvelope, type OpsAssoc, type OpsValue } from './opensrs-xml'
import { RegistrarError, type Contact, type DomainQuote, type RegisterInput, type RegisteredDomain, type Registrar, type RegistrarErrorKind } from './types'

export interface OpenSrsOptions {
  /** `https://rr-n1-tor.opensrs.net:55443` live, `https://horizon.opensrs.net:55443` for OpenSRS's test system. */
  url: string
  user: string
  key: string
  /** Milliseconds before a call counts as unanswered (nothing is assumed to have happened). */
  timeoutMs?: number
}

const DEFAULT_TIMEOUT_MS = 15_000

/**
 * OpenSRS response codes (OpenSRS's return-code list: 2xx success, 3xx rate limits, 4xx errors),
 * mapped to what the caller may tell the agent. Classified by code, never by message text.
 * OpenSRS has no code of its own for a reseller balance that cannot pay; its quota error (440)
 * is what an exhausted prepaid account answers, so it is `funds` (402 to the agent).
 */
const ERROR_KINDS: Record<number, RegistrarErrorKind> = {
  300: 'unreachable', // exceeded the command rate
  310: 'unreachable', // too many simultaneous connections
  400: 'unreachable', // OpenSRS internal error
  405: 'unreachable', // registry error
  410: 'unreachable', // reseller authentication: registrar.opensrs_user or _key is wrong
  430: 'unreachable', // invalid command (a bug of ours, not the agent's)
  435: 'unreachable', // permission denied for the reseller
  437: 'unreachable', // another request is waiting on this domain: retry
  440: 'funds', // registration quota / prepaid balance exhausted
  460: 'invalid', // missing required field
  465: 'invalid', // invalid data: syntax, contact, nameservers
  480: 'not_found', // item not found
  485: 'taken', // already exists: the domain is taken
  486: 'unreachable', // already being registered elsewhere: retry shortly
  487: 'invalid', // not transferable
}

/**
 * The OpenSRS registrar, over its XML API (XCP protocol): each command is one POST of an OPS
 * envelope, signed with `X-Signature: md5(md5(body + key) + key)`. Domain-scoped commands name
 * the domain in the request (no cookies). Nothing is retried here: the caller decides (a
 * registration is never retried blindly).
 */
export class OpenSrsRegistrar implements Registrar {
  readonly name = 'opensrs'
  readonly sandbox = false

  constructor(private o: OpenSrsOptions) {}

  async search(domain: string): Promise<DomainQuote> {
    const lookup = await this.call('LOOKUP', { domain }, { accept: [210, 211, 221] })
    const available = lookup.code === 210
    const [registration, renewal] = await Promise.all([
      this.call('GET_PRICE', { domain, period: '1', reg_type: 'new' }),
      this.call('GET_PRICE', { domain, period: '1', reg_type: 'renewal' }),
    ])
    return {
      domain,
      available,
      premium: text(registration.attributes.is_registry_premium) === '1',
      registerCents: cents(registration.attributes.price),
      renewCents: cents(renewal.attributes.price),
    }
  }

  async register(input: RegisterInput): Promise<RegisteredDomain> {
    const contact = contactOf(input.contact)
    const attributes: OpsAssoc = {
      domain: input.domain,
      reg_type: 'new',
      period: String(input.periodYears),
      handle: 'process',
      auto_renew: flag(input.autoRenew),
      f_lock_domain: flag(input.locked),
      f_whois_privacy: flag(input.privacy),
      // OpenSRS's per-domain management login; Berth never uses it, so it is random.
      reg_username: `berth${randomBytes(4).toString('hex')}`,
      reg_password: randomBytes(12).toString('base64url'),
      custom_tech_contact: '0',
      custom_nameservers: '1',
      nameserver_list: input.nameservers.map((name, i) => ({ name, sortorder: String(i + 1) })),
      contact_set: { owner: contact, admin: contact, billing: contact, tech: contact },
    }
    if (input.caLegalType) Object.assign(attributes, { legal_type: input.caLegalType, lang: 'EN', isa_trademark: '0', domain_description: input.domain })
    const started = Date.now()
    const reply = await this.call('SW_REGISTER', attributes)
    return { domain: input.domain, registrarRef: text(reply.attributes.id) || input.domain, expiresAt: addYears(started, input.periodYears) }
  }

  /** GET all_info: OpenSRS answers 415/480 for a domain that is not in this reseller account. */
  async find(domain: string): Promise<RegisteredDomain | null> {
    let reply
    try {
      reply = await this.call('GET', { domain, type: 'all_info' }, { accept: [415] })
      if (reply.code === 415) return null
    } catch (err) {
      if (err instanceof RegistrarError && err.kind === 'not_found') return null
      throw err
    }
    const expires = Date.parse(`${text(reply.attributes.expiredate).replace(' ', 'T')}Z`)
    if (!Number.isFinite(expires)) throw new RegistrarError('unreachable', `OpenSRS answered GET all_info for ${domain} without an expiredate`)
    return { domain, registrarRef: text(reply.attributes.id) || domain, expiresAt: expires }
  }

  async renew(input: { domain: string; periodYears: number; currentExpiry: number }): Promise<{ expiresAt: number }> {
    const reply = await this.call('RENEW', {
      domain: input.domain,
      period: String(input.periodYears),
      currentexpirationyear: String(new Date(input.currentExpiry).getUTCFullYear()),
      auto_renew: '0',
      handle: 'process',
    })
    const stated = Date.parse(`${text(reply.attributes['registration expiration date']).replace(' ', 'T')}Z`)
    return { expiresAt: Number.isFinite(stated) ? stated : addYears(input.currentExpiry, input.periodYears) }
  }

  async setNameservers(domain: string, nameservers: string[]): Promise<void> {
    await this.call('ADVANCED_UPDATE_NAMESERVERS', { domain, op_type: 'assign', assign_ns: nameservers })
  }

  async updateSettings(domain: string, settings: { autoRenew?: boolean; locked?: boolean; privacy?: boolean }): Promise<void> {
    if (settings.locked !== undefined) await this.call('MODIFY', { domain, data: 'status', lock_state: flag(settings.locked) })
    if (settings.privacy !== undefined) await this.call('MODIFY', { domain, data: 'whois_privacy_state', state: settings.privacy ? 'enable' : 'disable' })
    if (settings.autoRenew !== undefined) await this.call('MODIFY', { domain, data: 'expire_action', auto_renew: flag(settings.autoRenew), let_expire: '0' })
  }

  async transferOutCode(domain: string): Promise<string> {
    const reply = await this.call('GET', { domain, type: 'domain_auth_info' })
    const code = text(reply.attributes.domain_auth_info)
    if (!code) throw new RegistrarError('unreachable', 'OpenSRS answered no domain_auth_info')
    return code
  }

  /**
   * One command. `accept` lists response codes that are answers rather than errors (LOOKUP's
   * 211, taken); otherwise any is_success other than 1 is a RegistrarError by its code.
   */
  private async call(action: string, attributes: OpsAssoc, opts: { accept?: number[] } = {}): Promise<{ code: number; attributes: OpsAssoc }> {
    const domain = attributes.domain
    const body = encodeEnvelope({ protocol: 'XCP', action, object: 'DOMAIN', ...(typeof domain === 'string' ? { domain } : {}), attributes })
    let xml: string
    try {
      const res = await fetch(this.o.url, {
        method: 'POST',
        headers: { 'content-type': 'text/xml', 'x-username': this.o.user, 'x-signature': signature(body, this.o.key) },
        body,
        signal: AbortSignal.timeout(this.o.timeoutMs ?? DEFAULT_TIMEOUT_MS),
      })
      xml = await res.text()
      if (!res.ok) throw new Error(`HTTP ${res.status}`)
    } catch (err) {
      throw new RegistrarError('unreachable', `OpenSRS did not answer ${action}: ${(err as Error).message}`)
    }
    let reply: OpsAssoc
    try {
      reply = decodeEnvelope(xml)
    } catch (err) {
      throw new RegistrarError('unreachable', `OpenSRS answered ${action} with something that is not an OPS envelope (${(err as Error).message})`)
    }
    const code = Number(text(reply.response_code))
    const answer = { code, attributes: typeof reply.attributes === 'object' && !Array.isArray(reply.attributes) ? reply.attributes : {} }
    if (opts.accept?.includes(code)) return answer
    if (text(reply.is_success) === '1') return answer
    const message = text(reply.response_text) || `response code ${code}`
    const kind = ERROR_KINDS[code] ?? 'unreachable'
    throw new RegistrarError(kind, `OpenSRS ${action}: ${message} (${code})`, kind === 'invalid' ? paramFor(message) : kind === 'taken' ? 'domain' : null)
  }
}

/** The hex signature OpenSRS checks: md5(md5(body + key) + key). */
export function signature(body: string, key: string): string {
  const md5 = (s: string) => createHash('md5').update(s).digest('hex')
  return md5(md5(body + key) + key)
}

/** The request field an OpenSRS data error is about, as the hosting API names it; null when unclear. */
function paramFor(message: string): string | null {
  const m = message.toLowerCase()
  const fields: [RegExp, string][] = [
    [/phone/, 'contact.phone'], [/e-?mail/, 'contact.email'], [/postal|zip/, 'contact.postal_code'], [/country/, 'contact.country'],
    [/state|province/, 'contact.state'], [/city/, 'contact.city'], [/address/, 'contact.address1'], [/first.?name/, 'contact.first_name'],
    [/last.?name/, 'contact.last_name'], [/legal.?type/, 'ca_legal_type'], [/period/, 'period'], [/domain/, 'domain'],
  ]
  return fields.find(([re]) => re.test(m))?.[1] ?? null
}

function contactOf(c: Contact): OpsAssoc {
  return {
    first_name: c.first_name, last_name: c.last_name, org_name: `${c.first_name} ${c.last_name}`, email: c.email, phone: c.phone,
    address1: c.address1, city: c.city, state: c.state, postal_code: c.postal_code, country: c.country, lang: 'EN',
  }
}

const flag = (b: boolean) => (b ? '1' : '0')
const text = (v: OpsValue | undefined): string => (typeof v === 'string' ? v.trim() : '')

/** A price in the reseller's currency (CAD for Berth's accounts) as integer cents. */
function cents(v: OpsValue | undefined): number {
  const n = Number(text(v))
  if (!Number.isFinite(n) || n < 0) throw new RegistrarError('unreachable', `OpenSRS answered a price that is not a number: '${text(v)}'`)
  return Math.round(n * 100)
}

