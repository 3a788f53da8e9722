import { Elysia } from 'elysia'
import { access } from './http/access'
import type { ClientAddress } from './http/client-address'
import type { KeysService } from './keys/service'
import { rateLimit } from './rate-limits/plugin'
import type { RateLimiter } from './rate-limits/service'

/** The per-route declarations every feature's routes use: `public`/`scope` and `rateLimit`. */
export const apiPlugins = (deps: { keys: KeysService; limiter: RateLimiter; clients: ClientAddress }) =>
  new Elysia({ name: 'api-plugins' }).use(access(deps.keys)).use(rateLimit(deps.limiter, deps.clients))

export type ApiPlugins = ReturnType<typeof apiPlugins>
