import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { EventRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { EventsRepository } from './repository'
import type { EventType } from './types'

/** How long events are kept (docs/api.md, "Events"). */
export const EVENT_RETENTION_DAYS = 30
const DAY_MS = 86_400_000

export interface EventInput {
  type: EventType
  accountId: string
  siteId?: string | null
  /** The site's slug now: shown with the event even after the site is purged. */
  siteSlug?: string | null
  /** The object as the API shows it, no secrets. */
  data: Record<string, unknown>
}

/** `evt_` and 24 hex characters (96 random bits). */
export function newEventId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12))
  return 'evt_' + Buffer.from(bytes).toString('hex')
}

/**
 * The event log (issue 41): every state change an owner would want to hear of, recorded in the
 * transaction of the change, so an event is never lost and never told of a change that did not
 * happen. The webhooks' fan-out hooks in (`onRecord`, same transaction); long polls, MCP
 * subscriptions and the webhook sender listen for commits (`onCommitted`).
 */
export class EventLog {
  private readonly repo: EventsRepository
  private readonly store: Store
  private readonly clock: Clock
  private readonly log: Logger
  private readonly hooks: ((event: EventRow) => void)[] = []
  private readonly listeners = new Set<(event: EventRow) => void>()
  /** Events recorded since the last wake-up (one microtask per burst, however many were recorded). */
  private pending: EventRow[] = []

  constructor(d: { store: Store; clock: Clock; log: Logger }) {
    this.store = d.store
    this.clock = d.clock
    this.log = d.log
    this.repo = new EventsRepository(d.store)
  }

  /**
   * Records the event in the current store transaction (call it inside `store.write`, next to the
   * change it tells of; outside one it makes its own). Every onRecord hook runs in the same
   * transaction: a hook's throw rolls the whole change back. The onCommitted listeners are woken
   * once the transaction is over (a microtask: `store.write` is synchronous), with the events
   * still in the store: one a rollback took is not told of.
   */
  record(e: EventInput): EventRow {
    const row = this.store.write(() => {
      const inserted = this.repo.insert({
        id: newEventId(), type: e.type, accountId: e.accountId, siteId: e.siteId ?? null, siteSlug: e.siteSlug ?? null,
        data: JSON.stringify(e.data), createdAt: this.clock.now(),
      })
      for (const hook of this.hooks) hook(inserted)
      return inserted
    })
    if (this.listeners.size > 0) {
      if (this.pending.length === 0) queueMicrotask(() => this.wake())
      this.pending.push(row)
    }
    return row
  }

  /** In-transaction hooks, run by `record` for each event (the webhooks' deliveries are added here). */
  onRecord(hook: (event: EventRow) => void): void {
    this.hooks.push(hook)
  }

  /** After-commit listeners (long polls, MCP subscriptions, the webhook sender's wake-up); returns the unsubscribe. */
  onCommitted(listener: (event: EventRow) => void): () => void {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }

  /** How many onCommitted listeners are registered (a long poll that ended has removed its own). */
  get listening(): number {
    return this.listeners.size
  }

  /** The account's events after `afterSeq`, oldest first: the site's only, and of `types` only, when given; the newest `limit` of them with `newest`. */
  list(q: { accountId: string; siteId?: string; afterSeq?: number; types?: EventType[]; limit: number; newest?: boolean }): EventRow[] {
    return this.repo.list(q)
  }

  /** The account's event with this id (undefined for another account's, or one pruned). */
  find(accountId: string, id: string): EventRow | undefined {
    return this.repo.find(accountId, id)
  }

  /** The newest event's seq of the account (0 when none): where a wait that starts now begins. */
  lastSeq(accountId: string): number {
    return this.repo.lastSeq(accountId)
  }

  /** Deletes the events older than EVENT_RETENTION_DAYS (the upkeep calls it); returns how many. */
  prune(now: number): number {
    const removed = this.repo.deleteBefore(now - EVENT_RETENTION_DAYS * DAY_MS)
    if (removed > 0) this.log.info('events pruned', { removed })
    return removed
  }

  private wake(): void {
    const recorded = this.pending
    this.pending = []
    const kept = this.repo.existing(recorded.map((e) => e.seq))
    for (const event of recorded) {
      if (!kept.has(event.seq)) continue
      for (const listener of [...this.listeners]) {
        try {
          listener(event)
        } catch (err) {
          // One listener's fault leaves the others (and the change, committed already) be.
          this.log.error('events: a listener failed', { type: event.type, error: (err as Error).message })
        }
      }
    }
  }
}
