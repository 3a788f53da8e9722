import { Elysia } from 'elysia'
import { access, type CheckoutProof } from './http/access'
import { documentedErrors } from './http/error-docs'
import type { ClientAddress } from './http/client-address'
import type { KeysService } from '../domain/keys'
import { rateLimit } from './rate-limits/plugin'
import type { RateLimiter } from '../domain/rate-limits'
import type { SiteGuard } from '../domain/sites'

/** The per-route declarations every feature's routes use: `public`/`scope`, `site`, `checkoutSecret`, `rateLimit` and `errors`. */
export const apiPlugins = (deps: { keys: KeysService; guard: SiteGuard; checkouts: CheckoutProof; limiter: RateLimiter; clients: ClientAddress }) =>
  new Elysia({ name: 'api-plugins' }).use(access(deps.keys, deps.guard, deps.checkouts)).use(rateLimit(deps.limiter, deps.clients)).use(documentedErrors())

export type ApiPlugins = ReturnType<typeof apiPlugins>
