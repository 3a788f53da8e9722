import { invalid, notFound, op, OverBudgetError, say } from '../errors'
import type { EventRow } from '../../store/schema'
import type { EventLog } from './log'
import { isEventType, type EventType } from './types'
import { viewOf, type EventPageView, type EventView } from './views'

/** The longest `wait` (and wait_for_event's `timeout_seconds`), in seconds. */
export const MAX_WAIT_SECONDS = 60
export const DEFAULT_LIMIT = 50
export const MAX_LIMIT = 100
/**
 * Long polls one account may hold at once (GET /events/?wait=, wait_for_event): each holds a
 * connection and a listener until an event or its time comes. One more is 429 with Retry-After.
 */
export const MAX_HELD_PER_ACCOUNT = 20
/** The Retry-After of that 429, in seconds. */
const HELD_RETRY_S = 5

/**
 * Who reads: the key's account, and its site for a site-scoped key (a Principal of domain/keys,
 * named by its shape: keys record events, so the events area does not import them).
 */
export interface EventReader {
  accountId: string
  siteId: string | null
  siteSlug: string | null
}

/** What a caller asks of the log: the REST door's query, already shaped (`types` still as sent). */
export interface FeedQuery {
  after?: string
  /** Comma-separated event types, as sent. */
  types?: string
  site?: string
  limit: number
  /** Seconds to hold the request when nothing matches (0: answer at once). */
  wait: number
}

/** Finds the caller's live site by its slug (SiteGuard's lookup): undefined for a missing or another account's. */
export type SiteOfSlug = (accountId: string, slug: string) => { id: string } | undefined

/** A query made concrete: whose events, from where, of what. */
interface Filter {
  accountId: string
  siteId?: string
  afterSeq?: number
  types?: EventType[]
}

/**
 * The event log as an agent reads it (GET /events/, MCP list_events and wait_for_event): the
 * caller's events (a site-scoped key's site's only) after a cursor, oldest first, and a long poll
 * that holds the request until a matching event is committed (woken by `EventLog.onCommitted`,
 * no polling) or the time runs out.
 */
export class EventFeed {
  /** The held requests' ends, so a stopping server answers them at once (`release`). */
  private held = new Set<() => void>()
  /** Per account: how many of its requests are held now. */
  private heldBy = new Map<string, number>()
  private released = false

  constructor(private log: Pick<EventLog, 'list' | 'find' | 'onCommitted'>, private siteOf: SiteOfSlug) {}

  /** A page of the caller's events after `after`; with `wait`, held until one matches when none does yet (`waitParam`: the caller's name for it). */
  async page(p: EventReader, q: FeedQuery, signal?: AbortSignal, waitParam = 'wait'): Promise<EventPageView> {
    const filter = this.filterOf(p, q)
    let rows = this.log.list({ ...filter, limit: q.limit + 1 })
    if (rows.length === 0 && q.wait > 0) {
      const holding = this.heldBy.get(p.accountId) ?? 0
      if (holding >= MAX_HELD_PER_ACCOUNT) {
        throw new OverBudgetError(say`Your account holds ${MAX_HELD_PER_ACCOUNT} long polls already (wait, wait_for_event), the most it may at once; wait on one of them (its types and site filters can be wider), or ask again without waiting.`, HELD_RETRY_S, waitParam)
      }
      this.heldBy.set(p.accountId, holding + 1)
      try {
        await this.until(filter, q.wait * 1000, signal)
      } finally {
        const left = (this.heldBy.get(p.accountId) ?? 1) - 1
        if (left > 0) this.heldBy.set(p.accountId, left)
        else this.heldBy.delete(p.accountId)
      }
      rows = this.log.list({ ...filter, limit: q.limit + 1 })
    }
    const hasMore = rows.length > q.limit
    const events = (hasMore ? rows.slice(0, q.limit) : rows).map(viewOf)
    return { events, has_more: hasMore, next_after: events.at(-1)?.id ?? q.after ?? null }
  }

  /** The first of the caller's events after `after` that matches, waiting up to `timeoutSeconds` for one; null when none came. */
  async next(p: EventReader, q: { after?: string; types?: string; site?: string; timeoutSeconds: number }, signal?: AbortSignal): Promise<{ event: EventView | null }> {
    const page = await this.page(p, { after: q.after, types: q.types, site: q.site, limit: 1, wait: q.timeoutSeconds }, signal, 'timeout_seconds')
    return { event: page.events[0] ?? null }
  }

  /**
   * Calls `notify` for each of the caller's events (a site-scoped key's site's; `site`'s only when
   * given) once committed, until the returned function is called: an MCP session's subscription.
   */
  watch(p: EventReader, site: string | undefined, notify: (event: EventRow) => void): () => void {
    const filter = this.filterOf(p, { site, limit: 1, wait: 0 })
    return this.log.onCommitted((e) => {
      if (matches(e, filter)) notify(e)
    })
  }

  /** The caller's newest `limit` events (of `site` when given), oldest first: what the MCP events resource reads. */
  newest(p: EventReader, site: string | undefined, limit = DEFAULT_LIMIT): EventView[] {
    const filter = this.filterOf(p, { site, limit, wait: 0 })
    return this.log.list({ ...filter, limit, newest: true }).map(viewOf)
  }

  /**
   * Answers every held request now (with what the log holds: nothing new, usually) and holds no
   * more: `berth serve` stopping, so a restart does not wait out agents' long polls.
   */
  release(): void {
    this.released = true
    for (const done of [...this.held]) done()
  }

  private filterOf(p: EventReader, q: FeedQuery): Filter {
    const filter: Filter = { accountId: p.accountId }
    if (q.types !== undefined) filter.types = typesOf(q.types)
    if (p.siteId !== null) {
      // A site-scoped key sees its own site's events only; another site is as missing as anywhere.
      if (q.site !== undefined && q.site !== p.siteSlug) throw notFound(say`No site '${q.site}' in your account; this key sees only the events of its own site, '${p.siteSlug}'.`, 'site')
      filter.siteId = p.siteId
    } else if (q.site !== undefined) {
      const site = this.siteOf(p.accountId, q.site)
      if (!site) throw notFound(say`No site '${q.site}' in your account; ${op('listSites')} lists yours.`, 'site')
      filter.siteId = site.id
    }
    if (q.after !== undefined) {
      const from = this.log.find(p.accountId, q.after)
      if (!from || (p.siteId !== null && from.siteId !== p.siteId)) {
        throw invalid('after', say`No event '${q.after}' in your log (events are kept 30 days); send the id of the last event you received, or leave after out to read from the oldest kept.`)
      }
      filter.afterSeq = from.seq
    }
    return filter
  }

  /** Resolves when an event matching `filter` is committed, after `ms`, or when `signal` aborts (the client went away). */
  private until(filter: Filter, ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal?.aborted || this.released) return resolve()
      const done = () => {
        clearTimeout(timer)
        stop()
        signal?.removeEventListener('abort', done)
        this.held.delete(done)
        resolve()
      }
      this.held.add(done)
      const timer = setTimeout(done, ms)
      const stop = this.log.onCommitted((e) => {
        if (matches(e, filter)) done()
      })
      signal?.addEventListener('abort', done)
    })
  }
}

function matches(e: EventRow, f: Filter): boolean {
  return e.accountId === f.accountId && (f.siteId === undefined || e.siteId === f.siteId) &&
    (f.afterSeq === undefined || e.seq > f.afterSeq) && (f.types === undefined || f.types.includes(e.type))
}

/** `site.down,site.up` as types; an unknown one is a 422 naming it. */
function typesOf(text: string): EventType[] {
  const types = text.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (types.length === 0) throw invalid('types', 'types is empty; send event types separated by commas (e.g. site.down,site.up), or leave it out for all.')
  for (const type of types) {
    if (!isEventType(type)) throw invalid('types', say`Unknown event type '${type}'; the types are listed in the API document (listEvents) and docs/api.md, "Event types".`)
  }
  return types as EventType[]
}
