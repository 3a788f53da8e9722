import { randomBytes } from 'node:crypto'
import type { Clock } from '../../lib/clock'
import { OverBudgetError, unavailable } from '../errors'
import { sha256 } from '../keys'

/** A console ticket is valid this long after it was issued (issue 26). */
export const TICKET_TTL_MS = 60_000
/**
 * A used or expired ticket is remembered this long after its expiry, so that it is refused as
 * used or expired (410, saying so) rather than as unknown (404); then forgotten.
 */
const REMEMBER_SPENT_MS = 60 * 60_000

/** How many tickets may be issued and held (issue 36): each bound is one tenant's, never all of them. */
export interface TicketLimits {
  /** Unused, unexpired tickets one site may have at once. */
  pendingPerSite: number
  /** Unused, unexpired tickets one account may have at once (all its sites together). */
  pendingPerAccount: number
  /** Tickets one account may be issued within `windowMs`. */
  issuesPerWindow: number
  windowMs: number
  /**
   * At most this many tickets are remembered on the box (each ~300 bytes); past it, used and
   * expired ones are forgotten first, oldest first. A pending ticket is never forgotten to make
   * room: when every remembered one is pending, a new one is refused (503).
   */
  maxTickets: number
}

export const TICKET_LIMITS: Readonly<TicketLimits> = {
  pendingPerSite: 6,
  pendingPerAccount: 20,
  issuesPerWindow: 60,
  windowMs: 10 * 60_000,
  maxTickets: 20_000,
}

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

/** One account's recent issues (times, oldest first) and its pending tickets. */
interface Holder {
  issued: number[]
  pending: Set<Entry>
}

/**
 * Console tickets: single-use bearer tokens in the console's URLs, so that a browser (which
 * cannot send an Authorization header with a WebSocket) and a link a person opens carry no API
 * key. 256 random bits, kept in memory as their SHA-256 only (a heap dump yields no usable
 * ticket), valid TICKET_TTL_MS (or `dev.console_ticket_seconds`), spent by the WebSocket's
 * upgrade (`take`), not by loading the page (`peek`). A restart forgets them all: a ticket is
 * for the next minute, never kept. Issuing is bounded per site and per account (TICKET_LIMITS):
 * one account's flood is refused (429) and leaves every other account's tickets valid.
 */
export class ConsoleTickets {
  private entries = new Map<string, Entry>()
  private holders = new Map<string, Holder>()
  private limits: TicketLimits

  constructor(private clock: Clock, private ttlMs = TICKET_TTL_MS, limits: Partial<TicketLimits> = {}) {
    this.limits = { ...TICKET_LIMITS, ...limits }
  }

  /**
   * A new ticket for `grant`, and when it expires (ms since the epoch). Throws over_budget (429,
   * with when to retry) past a limit of TICKET_LIMITS, unavailable (503) when the box holds its
   * most pending tickets.
   */
  issue(grant: ConsoleGrant): { ticket: string; expiresAt: number } {
    const now = this.clock.now()
    this.forgetOld(now)
    const holder = this.holderOf(grant.accountId, now)
    this.requireRoom(grant, holder, now)
    if (this.entries.size >= this.limits.maxTickets) throw unavailable('This box holds as many unused console tickets as it keeps; retry in a minute, once some have expired.')
    const ticket = randomBytes(32).toString('base64url')
    const entry: Entry = { grant, expiresAt: now + this.ttlMs, used: false }
    this.entries.set(sha256(ticket), entry)
    holder.issued.push(now)
    holder.pending.add(entry)
    return { ticket, expiresAt: entry.expiresAt }
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
    if (seen.state !== 'valid') return seen
    const entry = this.entries.get(sha256(ticket))!
    entry.used = true
    this.holders.get(entry.grant.accountId)?.pending.delete(entry)
    return seen
  }

  /** Throws 429 when `grant`'s account or site may not have one more ticket now. */
  private requireRoom(grant: ConsoleGrant, holder: Holder, now: number): void {
    const { pendingPerSite, pendingPerAccount, issuesPerWindow, windowMs } = this.limits
    const retryAt = (at: number) => Math.max(1, Math.ceil((at - now) / 1000))
    if (holder.issued.length >= issuesPerWindow) {
      const retry = retryAt(holder.issued[0]! + windowMs)
      throw new OverBudgetError(`This account was issued ${issuesPerWindow} console tickets in the last ${windowMs / 60_000} minutes, the most it may; retry in ${retry} seconds.`, retry)
    }
    const pending = [...holder.pending]
    if (pending.length >= pendingPerAccount) {
      const retry = retryAt(pending[0]!.expiresAt)
      throw new OverBudgetError(`This account holds ${pendingPerAccount} unused console tickets, the most it may; connect with one, or retry in ${retry} seconds when the oldest expires.`, retry)
    }
    const ofSite = pending.filter((e) => e.grant.siteId === grant.siteId)
    if (ofSite.length >= pendingPerSite) {
      const retry = retryAt(ofSite[0]!.expiresAt)
      throw new OverBudgetError(`Site '${grant.slug}' has ${pendingPerSite} unused console tickets, the most it may; connect with one, or retry in ${retry} seconds when the oldest expires.`, retry)
    }
  }

  /** The account's holder, with its issues outside the window and its expired tickets dropped. */
  private holderOf(accountId: string, now: number): Holder {
    let holder = this.holders.get(accountId)
    if (!holder) this.holders.set(accountId, (holder = { issued: [], pending: new Set() }))
    const since = now - this.limits.windowMs
    while (holder.issued.length > 0 && holder.issued[0]! <= since) holder.issued.shift()
    for (const entry of holder.pending) if (entry.expiresAt <= now) holder.pending.delete(entry)
    return holder
  }

  /**
   * Drops tickets past REMEMBER_SPENT_MS after their expiry, then, while the box holds its most,
   * the oldest used or expired ones; and the accounts with nothing left to count.
   */
  private forgetOld(now: number): void {
    const cutoff = now - REMEMBER_SPENT_MS
    // A Map iterates in insertion order, which is expiry order: stop at the first one to keep.
    for (const [hash, entry] of this.entries) {
      if (entry.expiresAt > cutoff) break
      this.entries.delete(hash)
    }
    if (this.entries.size >= this.limits.maxTickets) {
      for (const [hash, entry] of this.entries) {
        if (this.entries.size < this.limits.maxTickets) break
        if (entry.used || entry.expiresAt <= now) this.entries.delete(hash)
      }
    }
    const since = now - this.limits.windowMs
    for (const [id, holder] of this.holders) {
      if ((holder.issued.at(-1) ?? 0) <= since && [...holder.pending].every((e) => e.expiresAt <= now)) this.holders.delete(id)
    }
  }
}
