import { randomBytes } from 'node:crypto'
import type { Clock } from '../../lib/clock'
import { sha256 } from '../keys/service'

/** A console ticket is valid this long after it was issued (issue 26). */
export const TICKET_TTL_MS = 60_000
/**
 * A used or expired ticket is remembered this long after its expiry, so that it is refused as
 * used or expired (410, saying so) rather than as unknown (404); then forgotten.
 */
const REMEMBER_SPENT_MS = 60 * 60_000
/** At most this many tickets are remembered; past it the oldest go first (each is ~200 bytes). */
const MAX_TICKETS = 20_000

/** What a ticket lets its bearer open: a console of this site, on behalf of this key. */
export interface ConsoleGrant {
  siteId: string
  slug: string
  accountId: string
  keyId: string
  /** The key's public prefix, for the audit trail. */
  keyPrefix: string
}

/** A ticket as seen by its bearer: good (with what it grants), or why not. */
export type TicketState = { state: 'valid'; grant: ConsoleGrant; expiresAt: number } | { state: 'used' | 'expired' | 'unknown' }

interface Entry {
  grant: ConsoleGrant
  expiresAt: number
  used: boolean
}

/**
 * Console tickets: single-use bearer tokens in the console's URLs, so that a browser (which
 * cannot send an Authorization header with a WebSocket) and a link a person opens carry no API
 * key. 256 random bits, kept in memory as their SHA-256 only (a heap dump yields no usable
 * ticket), valid TICKET_TTL_MS (or `dev.console_ticket_seconds`), spent by the WebSocket's
 * upgrade (`take`), not by loading the page (`peek`). A restart forgets them all: a ticket is
 * for the next minute, never kept.
 */
export class ConsoleTickets {
  private entries = new Map<string, Entry>()

  constructor(private clock: Clock, private ttlMs = TICKET_TTL_MS) {}

  /** A new ticket for `grant`, and when it expires (ms since the epoch). */
  issue(grant: ConsoleGrant): { ticket: string; expiresAt: number } {
    this.forgetOld()
    const ticket = randomBytes(32).toString('base64url')
    const expiresAt = this.clock.now() + this.ttlMs
    this.entries.set(sha256(ticket), { grant, expiresAt, used: false })
    return { ticket, expiresAt }
  }

  /** The ticket's state, leaving it as it is (the page's load). */
  peek(ticket: string): TicketState {
    const entry = this.entries.get(sha256(ticket))
    if (!entry) return { state: 'unknown' }
    if (entry.used) return { state: 'used' }
    if (this.clock.now() >= entry.expiresAt) return { state: 'expired' }
    return { state: 'valid', grant: entry.grant, expiresAt: entry.expiresAt }
  }

  /** As `peek`, and a valid ticket is spent: no second `take` finds it valid. */
  take(ticket: string): TicketState {
    const seen = this.peek(ticket)
    if (seen.state === 'valid') this.entries.get(sha256(ticket))!.used = true
    return seen
  }

  /** Drops tickets past REMEMBER_SPENT_MS after their expiry, and the oldest beyond MAX_TICKETS. */
  private forgetOld(): void {
    const cutoff = this.clock.now() - REMEMBER_SPENT_MS
    // A Map iterates in insertion order, which is expiry order: stop at the first one to keep.
    for (const [hash, entry] of this.entries) {
      if (entry.expiresAt > cutoff && this.entries.size < MAX_TICKETS) break
      this.entries.delete(hash)
    }
  }
}
