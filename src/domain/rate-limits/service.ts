import type { Clock } from '../../lib/clock'
import type { Store } from '../../store/store'
import { RateLimitsRepository } from './repository'

export interface RateRule {
  limit: number
  windowSeconds: number
}

export interface RateDecision {
  allowed: boolean
  limit: number
  remaining: number
  /** Seconds until the window frees a slot. */
  resetSeconds: number
  windowSeconds: number
}

/**
 * Per-client limits as a sliding-window log in the store, so counters survive a restart and
 * "5 per hour" means at most 5 in any 60 minutes, not 10 across a window boundary. Only allowed
 * requests are counted: a client that keeps hammering is not locked out for longer.
 */
export class RateLimiter {
  private repo: RateLimitsRepository

  constructor(private store: Store, private clock: Clock, private rules: Record<string, RateRule>) {
    this.repo = new RateLimitsRepository(store)
  }

  rule(name: string): RateRule {
    const rule = this.rules[name]
    if (!rule) throw new Error(`No rate-limit rule '${name}'`)
    return rule
  }

  /** Counts one request of `client` against rule `name` if it fits, atomically. */
  hit(name: string, client: string): RateDecision {
    const { limit, windowSeconds } = this.rule(name)
    const windowMs = windowSeconds * 1000
    return this.store.write(() => {
      const now = this.clock.now()
      const { n, oldest } = this.repo.count(name, client, now - windowMs)
      const resetSeconds = Math.max(1, Math.ceil(((oldest ?? now) + windowMs - now) / 1000))
      if (n >= limit) return { allowed: false, limit, remaining: 0, resetSeconds, windowSeconds }
      this.repo.insert(name, client, now, now + windowMs)
      return { allowed: true, limit, remaining: limit - n - 1, resetSeconds, windowSeconds }
    })
  }

  /** Deletes hits older than their window; run by the maintenance loop. */
  prune(): number {
    return this.store.write(() => this.repo.prune(this.clock.now()))
  }
}
