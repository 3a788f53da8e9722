import type { Clock } from '../../lib/clock'
import type { AccountCounts, AccountRecords } from '../accounts'
import type { Store } from '../../store/store'
import type { ApiKeyCreated, KeysService, Principal } from '../keys'

/** Accounts whose counts are kept at most; all are dropped past it. */
const COUNTS_LIMIT = 10_000

/** Registration and identity. */
export class AuthService {
  /**
   * whoami's counts by account, kept until the sites or subscriptions change: whoami read again and
   * again runs no query. They were read with the key at every authentication, which made every
   * request after a write pay for them (bench:lists, issue 22).
   */
  private counts = new Map<string, AccountCounts>()
  private countsVersion = -1
  /** What the counts are made of: sites and subscriptions. */
  private countsSource: () => number

  constructor(private store: Store, private clock: Clock, private accounts: Pick<AccountRecords, 'insert' | 'counts'>, private keys: KeysService) {
    this.countsSource = store.versionOf(['sites', 'billing'])
  }

  /** Creates an account and its first key (read, write, admin) in one transaction. */
  register(input: { name?: string; email?: string }): ApiKeyCreated {
    const name = input.name ?? 'Agent Key'
    return this.store.write(() => {
      const account = this.accounts.insert({ id: crypto.randomUUID(), email: input.email?.toLowerCase() ?? null, name, createdAt: this.clock.now() })
      return this.keys.issue(account.id, name, ['read', 'write', 'admin'])
    })
  }

  whoami(p: Principal) {
    return {
      user: { id: p.accountId, email: p.email, language: p.language, first_name: p.firstName, last_name: p.lastName },
      api_key: { id: p.keyId, scopes: p.scopes, site_scoped: p.siteId !== null, site_slug: p.siteSlug },
      account: this.countsOf(p.accountId),
    }
  }

  private countsOf(accountId: string): AccountCounts {
    const version = this.countsSource()
    if (version !== this.countsVersion || this.counts.size >= COUNTS_LIMIT) {
      this.counts.clear()
      this.countsVersion = version
    }
    let counts = this.counts.get(accountId)
    if (!counts) {
      counts = this.accounts.counts(accountId)
      this.counts.set(accountId, counts)
    }
    return counts
  }
}
