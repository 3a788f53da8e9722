/**
 * The event log as MCP resources (issue 41, Deliver item 4): `berth://events` (the caller's
 * account; a site-scoped key's own site) and `berth://sites/{tenant_slug}/events`, each readable
 * (the newest events) and subscribable: while the session is open, every event of the caller's
 * that matches sends `notifications/resources/updated` for the URI. A convenience over the log
 * (list_events, wait_for_event), which stays the source of truth: a notification lost with a
 * broken stream is an event still in the log.
 */
import { asDomainError, renderMessage } from '../../domain/errors'
import type { EventFeed } from '../../domain/events'
import type { KeysService, Principal } from '../../domain/keys'
import type { Caller } from './caller'
import { toolName } from './tools'

/** What the session server (sdk.ts) asks of the events, for a resource URI's site (undefined: the account's). */
export interface EventsDoor {
  /** The resource's contents: the caller's newest events as JSON text. */
  read(caller: Caller, site: string | undefined): string
  /** Calls `changed` for each matching event committed from now on; returns the unsubscribe. */
  subscribe(caller: Caller, site: string | undefined, changed: () => void): () => void
}

/** A refusal the client is told of in so many words (no key, a key without read, another's site). */
export class EventsRefusal extends Error {}

export const EVENTS_URI = 'berth://events'
const SITE_EVENTS = /^berth:\/\/sites\/([a-z0-9-]+)\/events$/

/** The site of an events resource URI ('' would be no site), or null for a URI that is none. */
export function eventsSiteOf(uri: string): { site: string | undefined } | null {
  if (uri === EVENTS_URI) return { site: undefined }
  const match = SITE_EVENTS.exec(uri)
  return match ? { site: match[1]! } : null
}

export function eventsDoor(feed: Pick<EventFeed, 'watch' | 'newest'>, keys: Pick<KeysService, 'authenticate'>): EventsDoor {
  const principalOf = (caller: Caller): Principal => {
    const match = caller.authorization ? /^bearer\s+(\S+)\s*$/i.exec(caller.authorization) : null
    if (!match) throw new EventsRefusal('Your events need your API key: send it as "Authorization: Bearer <key>" on the MCP HTTP requests.')
    const p = keys.authenticate(match[1]!)
    if (!p.scopes.includes('read')) throw new EventsRefusal("This key lacks the 'read' scope; use a key that has it (list_keys lists yours).")
    return p
  }
  /** The domain's refusals (a bad key, another account's site) in the tools' words; anything else is the server's fault. */
  const told = <T>(work: () => T): T => {
    try {
      return work()
    } catch (err) {
      const known = asDomainError(err)
      if (known) throw new EventsRefusal(renderMessage(typeof known.said === 'string' ? [known.said] : known.said, (ref) => toolName(ref.operation)))
      throw err
    }
  }
  return {
    read: (caller, site) => told(() => JSON.stringify({ events: feed.newest(principalOf(caller), site) })),
    subscribe: (caller, site, changed) => told(() => {
      const key = caller.authorization
      let stop = () => {}
      let queued = false
      stop = feed.watch(principalOf(caller), site, () => {
        // A key revoked since stops its subscriptions at the next event; a burst is one notification.
        try {
          principalOf({ ...caller, authorization: key })
        } catch {
          stop()
          return
        }
        if (queued) return
        queued = true
        queueMicrotask(() => {
          queued = false
          changed()
        })
      })
      return () => stop()
    }),
  }
}
