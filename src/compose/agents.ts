/** Agents: accounts, keys and who a request comes from (authentication, rate limits, client addresses), SSH and claims. */
import { CONTROL_NODE } from '../drivers/cluster/types'
import type { ClusterCore } from './cluster'
import { ClientAddress } from '../api/http/client-address'
import { AccountsService } from '../domain/accounts'
import { AuthService } from '../domain/auth'
import type { SubscriptionBilling } from '../domain/billing'
import { ClaimsService, makeClaimsRepository } from '../domain/claims'
import { RateLimiter } from '../domain/rate-limits'
import type { SiteRunner } from '../domain/sites'
import { SshService } from '../domain/ssh'
import type { PaymentProcessor } from '../drivers/payments/types'
import type { SiteRow } from '../store/schema'
import type { CoreReads, SharedRepositories } from './core'

export interface Agents {
  auth: AuthService
  limiter: RateLimiter
  clients: ClientAddress
  claims: ClaimsService
  ssh: SshService
  accountsRepo: SharedRepositories['accounts']
  /** Account update and deletion, and the billing portal's link. */
  accounts: AccountsService
}

/** What deleting an account ends, and the processor whose portal an account opens. */
export interface AgentsNeeds {
  processor: PaymentProcessor
  subscriptions: Pick<SubscriptionBilling, 'endNow'>
  runner: Pick<SiteRunner, 'stop'>
  /** enableGitPush: the apps area makes a site take git push (compose/apps.ts, AppPushes.prepare). */
  gitPush: (site: SiteRow) => Promise<{ moved: boolean }>
}

export function buildAgents(
  core: CoreReads<'config' | 'store' | 'clock' | 'log' | 'plans' | 'keys' | 'runtime', 'accounts' | 'sites' | 'keys' | 'domains' | 'billing'> & { cluster: Pick<ClusterCore, 'placement' | 'nodes'> | null },
  needs: AgentsNeeds,
): Agents {
  const { config, store, clock, log, plans, keys, runtime, repos } = core
  return {
    auth: new AuthService(store, clock, repos.accounts, keys),
    limiter: new RateLimiter(store, clock, config.rateLimits),
    clients: new ClientAddress(config.server.trustedProxies),
    claims: new ClaimsService({ store, clock, log, repo: makeClaimsRepository(store), sites: repos.sites, keys, runtime, prefix: config.brand.prefix }),
    ssh: new SshService({ ssh: config.ssh, plans, runtime, nodeHost: core.cluster ? nodeAddressOf(core.cluster) : undefined, gitPush: needs.gitPush }),
    accountsRepo: repos.accounts,
    accounts: new AccountsService({
      store, clock, log, repo: repos.accounts,
      owned: { keys: repos.keys, sites: repos.sites, domains: repos.domains },
      money: { billing: repos.billing, subscriptions: needs.subscriptions, processor: needs.processor },
      runner: needs.runner, siteUrl: config.server.siteUrl,
    }),
  }
}

/**
 * Where the node a site runs on is reached from the internet (its public address, else its
 * private one with a warning), or null on the control plane's own box (compose/cluster.ts).
 */
function nodeAddressOf(cluster: Pick<ClusterCore, 'placement' | 'nodes'>): (slug: string) => Promise<{ host: string; warning: string | null } | null> {
  return async (slug) => {
    const id = await cluster.placement.nodeOf(slug)
    const node = id && id !== CONTROL_NODE ? cluster.nodes.find(id) : null
    if (!node) return null
    if (node.publicAddress) return { host: node.publicAddress, warning: null }
    return { host: node.address, warning: `The server this site runs on (${node.name}) has no public address set: ${node.address} is its address on the hoster's private network, which only reaches it from there. Ask the hoster to set one (berth nodes set ${node.id} --public-address ADDR).` }
  }
}
