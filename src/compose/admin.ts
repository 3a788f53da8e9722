/**
 * `berth sites ...` and `berth accounts ...`: the hoster's commands (domain/sites/admin.ts,
 * domain/accounts/admin.ts) over the services `berth serve` builds, with nothing started (no
 * listener, no job runner, no background pass): they read and write the store directly and talk
 * to Docker, and a `berth serve` running beside sees their writes within EXTERNAL_CHECK_MS.
 */
import type { Config } from '../config/config'
import { AccountAdmin } from '../domain/accounts'
import { SiteAdmin } from '../domain/sites'
import type { Logger } from '../lib/logger'
import { buildServices, type Services } from './index'

export interface Admin {
  sites: SiteAdmin
  accounts: AccountAdmin
  close(): Promise<void>
}

export function buildAdmin(config: Config, log: Logger): Admin {
  const s = buildServices(config, { log, firewall: null })
  // Jobs an operation enqueues (none of the admin's own) are the running server's to run, never this process's.
  const jobsStopped = s.jobs.stop()
  const admin = adminOver(s, log)
  return {
    ...admin,
    close: async () => {
      await jobsStopped
      s.store.close()
    },
  }
}

/** The admin's services over built services (the CLI's, or a test's in-process ones). */
export function adminOver(s: Services, log: Logger): Omit<Admin, 'close'> {
  // The composition's repositories, made once (the sites' with its SSH-port policy).
  const { store, clock, runner, repos: { sites, billing, keys, accounts } } = s
  return {
    sites: new SiteAdmin({ store, clock, log, sites, views: s.sites, accounts, billing, lifecycle: s.lifecycle, reaper: s.reaper, runner }),
    accounts: new AccountAdmin({ store, clock, log, accounts, keys, sites, billing, runner }),
  }
}
