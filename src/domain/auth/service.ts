import type { Clock } from '../../lib/clock'
import type { Store } from '../../store/store'
import type { AccountsRepository } from '../accounts/repository'
import type { ApiKeyCreated } from '../keys/views'
import type { KeysService, Principal } from '../keys/service'

/** Registration and identity. */
export class AuthService {
  constructor(private store: Store, private clock: Clock, private accounts: AccountsRepository, private keys: KeysService) {}

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
      account: { sites: p.sites, active_subscriptions: p.activeSubscriptions },
    }
  }
}
