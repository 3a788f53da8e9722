import { onFirstUse } from '../store/prepared'
import type { Store } from '../store/store'

/** What a site has used this month and what calls under way hold, in tokens. */
export interface AiUsageNow {
  used: number
  held: number
}

/**
 * The only code that touches `ai_usage` (tokens each site used per UTC month) and
 * `ai_reservations` (tokens held by model calls under way). Plain prepared SQL: the reservation
 * is one conditional INSERT, so two calls can never both take the allowance's last tokens.
 */
export class AiUsageRepository {
  private usedOf = onFirstUse(() => this.store.sqlite.prepare<{ tokens: number }, [string, string]>(
    'SELECT tokens FROM ai_usage WHERE site_id = ? AND month = ?',
  ))
  private heldOf = onFirstUse(() => this.store.sqlite.prepare<{ tokens: number | null }, [string, number]>(
    'SELECT sum(tokens) AS tokens FROM ai_reservations WHERE site_id = ? AND expires_at > ?',
  ))
  private dropExpired = onFirstUse(() => this.store.sqlite.prepare<never, [number]>('DELETE FROM ai_reservations WHERE expires_at <= ?'))
  // Inserted only when the month's use, what other calls hold and this call together fit.
  private insertIfRoom = onFirstUse(() => this.store.sqlite.prepare<never, { id: string; site: string; tokens: number; expires: number; month: string; now: number; limit: number }>(`
    INSERT INTO ai_reservations (id, site_id, tokens, expires_at)
    SELECT :id, :site, :tokens, :expires
    WHERE coalesce((SELECT tokens FROM ai_usage WHERE site_id = :site AND month = :month), 0)
        + coalesce((SELECT sum(tokens) FROM ai_reservations WHERE site_id = :site AND expires_at > :now), 0)
        + :tokens <= :limit`))
  private deleteOne = onFirstUse(() => this.store.sqlite.prepare<never, [string]>('DELETE FROM ai_reservations WHERE id = ?'))
  private addUsage = onFirstUse(() => this.store.sqlite.prepare<never, { site: string; month: string; tokens: number }>(`
    INSERT INTO ai_usage (site_id, month, tokens, calls) VALUES (:site, :month, :tokens, 1)
    ON CONFLICT (site_id, month) DO UPDATE SET tokens = tokens + excluded.tokens, calls = calls + 1`))

  constructor(private store: Store) {}

  /** Tokens the site used in `month` (`2026-11`) and those held at `now` by calls under way. */
  usage(siteId: string, month: string, now: number): AiUsageNow {
    return { used: this.usedOf().get(siteId, month)?.tokens ?? 0, held: this.heldOf().get(siteId, now)?.tokens ?? 0 }
  }

  /**
   * Holds `tokens` for a call, as reservation `id` until `expiresAt`, when `used + held + tokens`
   * stays within `limit`; true when it was held. Expired reservations (left by a crash) go first.
   */
  reserve(r: { id: string; siteId: string; tokens: number; limit: number; month: string; now: number; expiresAt: number }): boolean {
    return this.store.write(() => {
      this.dropExpired().run(r.now)
      const { changes } = this.insertIfRoom().run({ id: r.id, site: r.siteId, tokens: r.tokens, expires: r.expiresAt, month: r.month, now: r.now, limit: r.limit })
      return changes === 1
    })
  }

  /** The call ended having cost `tokens`: counted in `month`, its reservation gone (together). */
  settle(id: string, siteId: string, month: string, tokens: number): void {
    this.store.write(() => {
      this.deleteOne().run(id)
      this.addUsage().run({ site: siteId, month, tokens })
    })
  }

  /** The call failed before it cost anything: its reservation goes. Releasing twice is harmless. */
  release(id: string): void {
    this.store.write(() => this.deleteOne().run(id))
  }
}
