import { join } from 'node:path'
import { AccountsRepository } from './api/accounts/repository'
import { AuthService } from './api/auth/service'
import { ClientAddress } from './api/http/client-address'
import { KeysRepository } from './api/keys/repository'
import { KeysService } from './api/keys/service'
import { PlansRepository } from './api/plans/repository'
import { PlansService } from './api/plans/service'
import { RateLimiter } from './api/rate-limits/service'
import type { StatusInfo } from './api/status/routes'
import type { Config } from './config/config'
import { systemClock, type Clock } from './lib/clock'
import { createLogger, type Logger } from './lib/logger'
import { migrate } from './store/migrate'
import { openStore, type Store } from './store/store'
import { VERSION } from './version'

/** Everything the API and the CLI work with, built once from the config. */
export interface Services {
  config: Config
  clock: Clock
  log: Logger
  store: Store
  plans: PlansService
  keys: KeysService
  auth: AuthService
  limiter: RateLimiter
  clients: ClientAddress
  status: StatusInfo
}

export const databasePath = (config: Config) => join(config.server.dataDir, 'berth.db')

/**
 * The composition root: opens (and migrates) the store, seeds the catalog on first start, and
 * wires repositories, drivers and services. Tests call it with their own config, clock and logger.
 */
export function buildServices(config: Config, opts: { clock?: Clock; log?: Logger; store?: Store } = {}): Services {
  const clock = opts.clock ?? systemClock
  const log = opts.log ?? createLogger(config.server.logLevel)
  const store = opts.store ?? openStore(databasePath(config))
  migrate(store)
  const plansRepo = new PlansRepository(store, clock)
  if (plansRepo.seedOnce(config.plans)) log.info('seeded the plan catalog', { plans: config.plans.map((p) => p.slug) })
  const keys = new KeysService(new KeysRepository(store), store, clock, config.brand.prefix)
  return {
    config,
    clock,
    log,
    store,
    plans: new PlansService(plansRepo, store, config.brand.prefix),
    keys,
    auth: new AuthService(store, clock, new AccountsRepository(store), keys),
    limiter: new RateLimiter(store, clock, config.rateLimits),
    clients: new ClientAddress(config.server.trustedProxies),
    status: {
      region: config.server.region,
      provider: config.server.provider,
      version: VERSION,
      processor: config.payments.processor,
      testMode: config.payments.processor === 'local',
    },
  }
}

/** Periodic upkeep: flush key last-used times and prune expired rate-limit hits. */
export function runMaintenance(s: Services): void {
  s.keys.flushLastUsed()
  s.limiter.prune()
}
