import { Elysia, type DocumentDecoration } from 'elysia'
import type { ClientAddress } from '../http/client-address'
import { RateLimitedError } from '../http/errors'
import type { RateDecision, RateLimiter } from '../../domain/rate-limits'

/**
 * `{ rateLimit: 'register' }` on a route counts each request of the client address against that
 * rule (after validation, so a malformed request costs nothing) and answers 429 past it. Headers
 * follow draft-ietf-httpapi-ratelimit-headers: RateLimit-Limit/-Remaining/-Reset and
 * RateLimit-Policy, on every response of a limited route; Retry-After on a 429 (RFC 9110 10.2.3).
 */
export function rateLimit(limiter: RateLimiter, clients: ClientAddress) {
  return new Elysia({ name: 'rate-limit' }).macro({
    rateLimit: (rule: string) => ({
      // An OpenAPI extension (x-...), which Elysia's detail type does not list.
      detail: { 'x-berth-rate-limit': describe(limiter, rule) } as DocumentDecoration,
      beforeHandle({ request, set }) {
        const decision = limiter.hit(rule, clients.of(request))
        const headers = rateHeaders(decision)
        if (!decision.allowed) throw new RateLimitedError(decision.resetSeconds, headers)
        Object.assign(set.headers, headers)
      },
    }),
  })
}

export function rateHeaders(d: RateDecision): Record<string, string> {
  return {
    'ratelimit-limit': String(d.limit),
    'ratelimit-remaining': String(d.remaining),
    'ratelimit-reset': String(d.resetSeconds),
    'ratelimit-policy': `${d.limit};w=${d.windowSeconds}`,
  }
}

function describe(limiter: RateLimiter, rule: string) {
  const { limit, windowSeconds } = limiter.rule(rule)
  return { limit, window_seconds: windowSeconds, per: 'client address' }
}
