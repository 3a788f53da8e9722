import type { Store } from '../../store/store'

/**
 * The rate limiter's sliding-window log (`rate_limit_hits`): one row per allowed request, kept
 * until its window has passed. Plain statements, prepared once: `hit` runs on every limited request.
 */
export class RateLimitsRepository {
  private countSince
  private insertHit
  private deleteExpired

  constructor(store: Store) {
    this.countSince = store.sqlite.prepare<{ n: number; oldest: number | null }, [string, string, number]>(
      'SELECT count(*) AS n, min(at) AS oldest FROM rate_limit_hits WHERE bucket = ? AND client = ? AND at > ?',
    )
    this.insertHit = store.sqlite.prepare('INSERT INTO rate_limit_hits (bucket, client, at, expires_at) VALUES (?, ?, ?, ?)')
    this.deleteExpired = store.sqlite.prepare('DELETE FROM rate_limit_hits WHERE expires_at < ?')
  }

  /** How many hits of `client` in `bucket` came after `since`, and the oldest of them. */
  count(bucket: string, client: string, since: number): { n: number; oldest: number | null } {
    return this.countSince.get(bucket, client, since)!
  }

  insert(bucket: string, client: string, at: number, expiresAt: number): void {
    this.insertHit.run(bucket, client, at, expiresAt)
  }

  /** Deletes hits whose window ended before `now`; returns how many. */
  prune(now: number): number {
    return this.deleteExpired.run(now).changes
  }
}
