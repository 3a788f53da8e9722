import type { Clock } from '../../lib/clock'
import { iso } from '../../lib/clock'
import type { ApiKeyRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, forbidden, invalid, notFound, op, say, unauthorized } from '../errors'
import { SCOPES, type Scope } from '../../core/enums'
import type { ApiKeyCreated, KeyListItem } from './views'
import type { KeysRepository } from './repository'
import type { EventLog } from '../events'

/** Who is calling: the key, its account, and for a site-scoped key the one site it may touch. */
export interface Principal {
  keyId: string
  /** The key's first 12 characters, as listings show it (the audit trail names the key by it). */
  keyPrefix: string
  accountId: string
  email: string | null
  language: 'en' | 'fr'
  firstName: string | null
  lastName: string | null
  scopes: Scope[]
  siteId: string | null
  siteSlug: string | null
}

const CACHE_LIMIT = 10_000
/** Characters of a key kept in the clear as its `prefix`. */
const KEY_PREFIX_LENGTH = 12

/**
 * Issues, lists, revokes and rotates API keys, and authenticates bearer keys.
 *
 * Keys are 192 random bits as 48 hex characters behind the brand prefix; the store keeps only
 * their SHA-256. Authentication keeps recently seen keys in memory and drops them all whenever
 * what a principal is made of moves (keys, accounts, sites: `Store.versionOf`), so a rotation or
 * revocation (by this process or by an admin command) is seen on the very next request while an
 * unchanged store costs no query.
 */
export class KeysService {
  private cache = new Map<string, Principal>()
  private cacheVersion = -1
  private source: () => number
  private lastUsed = new Map<string, number>()
  private keyPattern: RegExp

  constructor(
    private repo: KeysRepository, private store: Store, private clock: Clock, readonly prefix: string,
    /** Records `key.created` and `key.revoked` in the key's transaction (the key's list item: its prefix, never the key). */
    private events?: Pick<EventLog, 'record'>,
  ) {
    this.keyPattern = new RegExp(`^${prefix}_[0-9a-f]{48}$`)
    this.source = store.versionOf(['accounts', 'sites'])
  }

  /** Resolves an API key (as sent, the bearer token) to its principal; unauthorized otherwise. */
  authenticate(key: string): Principal {
    if (!this.keyPattern.test(key)) throw unauthorized(`The API key is malformed; keys are "${this.prefix}_" followed by 48 lowercase hex characters.`)
    const hash = sha256(key)
    const version = this.source()
    if (version !== this.cacheVersion) {
      this.cache.clear()
      this.cacheVersion = version
    }
    let principal = this.cache.get(hash)
    if (!principal) {
      principal = this.load(hash, key.slice(0, KEY_PREFIX_LENGTH))
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear()
      this.cache.set(hash, principal)
    }
    this.lastUsed.set(principal.keyId, this.clock.now())
    return principal
  }

  private load(hash: string, keyPrefix: string): Principal {
    const row = this.repo.findForAuth(hash)
    if (!row || (row.account_status !== 'active' && row.account_status !== 'suspended')) throw unauthorized(say`This API key is not valid; check it, or get a new one with ${op('register')}.`)
    if (row.revoked_reason === 'rotated') throw unauthorized('This API key was rotated; use the key the rotation returned.')
    if (row.revoked_reason) throw unauthorized('This API key was revoked; use another key.')
    // The key is genuine but its account is held (berth accounts suspend): 403, not 401, so an
    // agent does not throw away a good key or register a new account.
    if (row.account_status === 'suspended') throw forbidden('The account of this API key is suspended by the hoster; its keys and sites are on hold until the hoster lifts it. Contact the hoster.')
    return {
      keyId: row.key_id,
      keyPrefix,
      accountId: row.account_id,
      email: row.email,
      language: row.language === 'fr' ? 'fr' : 'en',
      firstName: row.first_name,
      lastName: row.last_name,
      scopes: JSON.parse(row.scopes) as Scope[],
      siteId: row.site_id,
      siteSlug: row.site_slug,
    }
  }

  /** Creates a key for an account. Call inside the caller's transaction when it creates more. */
  issue(accountId: string, name: string, scopes: Scope[], siteId: string | null = null): ApiKeyCreated {
    const apiKey = `${this.prefix}_${randomHex(24)}`
    return this.store.write(() => {
      const row = this.repo.insert({
        id: crypto.randomUUID(), accountId, name, prefix: apiKey.slice(0, KEY_PREFIX_LENGTH), keyHash: sha256(apiKey),
        scopes: JSON.stringify(orderScopes(scopes)), siteId, createdAt: this.clock.now(),
      })
      this.recordKey('key.created', row)
      return { api_key: apiKey, ...this.toCreated(row) }
    })
  }

  /** createKey: the new key's scopes must be a subset of the caller's. */
  create(caller: Principal, input: { name?: string; scopes?: Scope[] }): ApiKeyCreated {
    const scopes = input.scopes ? [...new Set(input.scopes)] : caller.scopes
    if (scopes.length === 0) throw invalid('scopes', 'Give at least one scope: read, write or admin.')
    this.requireSubset(caller, scopes)
    return this.issue(caller.accountId, input.name ?? 'Agent Key', scopes)
  }

  list(caller: Principal, includeRevoked: boolean): KeyListItem[] {
    return this.repo.list(caller.accountId, includeRevoked).map((r) => this.toListItem(r))
  }

  /** Revokes a key of the caller's account; revoking a revoked key is a no-op that succeeds. */
  revoke(caller: Principal, keyId: string): KeyListItem {
    const key = this.findOwn(caller, keyId)
    return this.store.write(() => {
      this.repo.revoke(key.id, this.clock.now(), 'revoked')
      const revoked = this.repo.find(caller.accountId, key.id)!
      if (key.revokedAt === null) this.recordKey('key.revoked', revoked)
      return this.toListItem(revoked)
    })
  }

  /** Replaces an active key with a new one of the same name and scopes; the old key dies at once. */
  rotate(caller: Principal, keyId: string): ApiKeyCreated {
    const key = this.findOwn(caller, keyId)
    if (key.revokedAt !== null) throw conflict(say`Key ${keyId} is already ${key.revokedReason}; create a new key with ${op('createKey')} instead.`, 'key_id')
    const scopes = JSON.parse(key.scopes) as Scope[]
    this.requireSubset(caller, scopes)
    return this.store.write(() => {
      const created = this.issue(key.accountId, key.name, scopes, key.siteId)
      this.repo.revoke(key.id, this.clock.now(), 'rotated', created.key_id)
      this.recordKey('key.revoked', this.repo.find(key.accountId, key.id)!)
      return created
    })
  }

  /** Writes the last-used times gathered since the previous flush; run by the maintenance loop. */
  flushLastUsed(): void {
    if (this.lastUsed.size === 0) return
    const batch = this.lastUsed
    this.lastUsed = new Map()
    this.repo.touch(batch)
  }

  private findOwn(caller: Principal, keyId: string): ApiKeyRow {
    const key = this.repo.find(caller.accountId, keyId)
    // Another account's key answers exactly like a missing one (design.md: not_found, never forbidden).
    if (!key) throw notFound(say`No key ${keyId} in your account; ${op('listKeys')} lists them.`, 'key_id')
    return key
  }

  private requireSubset(caller: Principal, scopes: Scope[]) {
    const extra = scopes.filter((s) => !caller.scopes.includes(s))
    if (extra.length > 0) {
      throw forbidden(`Your key cannot grant ${extra.map((s) => `'${s}'`).join(', ')}: a key can only give scopes it has itself.`, 'scopes')
    }
  }

  private toCreated(row: ApiKeyRow): Omit<ApiKeyCreated, 'api_key'> {
    return {
      key_id: row.id,
      prefix: row.prefix,
      name: row.name,
      scopes: JSON.parse(row.scopes) as Scope[],
      account_id: row.accountId,
      site_scoped: row.siteId !== null,
      created_at: iso(row.createdAt),
    }
  }

  private recordKey(type: 'key.created' | 'key.revoked', row: ApiKeyRow): void {
    if (!this.events) return
    this.events.record({ type, accountId: row.accountId, siteId: row.siteId, siteSlug: row.siteId ? this.repo.siteSlugOf(row.siteId) : null, data: this.toListItem(row) })
  }

  private toListItem(row: ApiKeyRow): KeyListItem {
    return {
      key_id: row.id,
      prefix: row.prefix,
      name: row.name,
      scopes: JSON.parse(row.scopes) as Scope[],
      site_scoped: row.siteId !== null,
      status: (row.revokedReason ?? 'active') as KeyListItem['status'],
      created_at: iso(row.createdAt),
      last_used_at: row.lastUsedAt === null ? null : iso(row.lastUsedAt),
      revoked_at: row.revokedAt === null ? null : iso(row.revokedAt),
    }
  }
}

export const sha256 = (text: string) => new Bun.CryptoHasher('sha256').update(text).digest('hex')
const randomHex = (bytes: number) => Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('hex')
const orderScopes = (scopes: Scope[]) => SCOPES.filter((s) => scopes.includes(s))
