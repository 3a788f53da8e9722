import { createHmac, timingSafeEqual } from 'node:crypto'
import type { Clock } from '../../lib/clock'

/** How long a billing-portal link works (design.md: a signed URL valid one hour). */
export const PORTAL_LINK_MS = 3600_000

/**
 * Signed links to Berth's own billing portal (the built-in processor's): the token names the
 * account, the flow and the expiry, with an HMAC-SHA256 under a secret kept in the store. Anyone
 * holding the link acts for the account until it expires, as with a Stripe portal session.
 */
export class PortalLinks {
  constructor(private o: { siteUrl: string; secret: Buffer; clock: Clock }) {}

  url(accountId: string, flow: '' | 'payment_method_update'): { url: string; expiresAt: number } {
    const expiresAt = this.o.clock.now() + PORTAL_LINK_MS
    const payload = `${accountId}.${Math.floor(expiresAt / 1000)}`
    const token = `${payload}.${this.sign(payload)}`
    return { url: `${this.o.siteUrl}/billing/portal/${token}/${flow ? `?flow=${flow}` : ''}`, expiresAt }
  }

  /** The account a token stands for, or why it does not (malformed, forged, expired). */
  verify(token: string): { ok: true; accountId: string; expiresAt: number } | { ok: false; reason: 'invalid' | 'expired' } {
    const m = /^([0-9a-f-]{36})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token)
    if (!m) return { ok: false, reason: 'invalid' }
    const expected = Buffer.from(this.sign(`${m[1]}.${m[2]}`))
    const given = Buffer.from(m[3]!)
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) return { ok: false, reason: 'invalid' }
    const expiresAt = Number(m[2]) * 1000
    if (expiresAt <= this.o.clock.now()) return { ok: false, reason: 'expired' }
    return { ok: true, accountId: m[1]!, expiresAt }
  }

  private sign(payload: string): string {
    return createHmac('sha256', this.o.secret).update(payload).digest('base64url')
  }
}
