import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { EventPage, NextEvent, type EventFeed } from '../../domain/events'
import { EventsQuery, NextEventQuery } from './model'

const tags = ['Events']

/**
 * The event log (docs/api.md, "Events"): what happened to the caller's account and sites, oldest
 * first from a cursor, kept 30 days, with a long poll. A site-scoped key sees its own site's.
 */
export const eventRoutes = (plugins: ApiPlugins, feed: EventFeed) =>
  new Elysia({ name: 'event-routes' })
    .use(plugins)
    .get('/events/', ({ principal, query, request }) => feed.page(principal, {
      after: query.after, types: query.types, site: query.site, limit: query.limit ?? 50, wait: query.wait ?? 0,
    }, request.signal), {
      scope: { scope: 'read', siteKeys: true },
      query: EventsQuery,
      response: ok(EventPage),
      errors: [404, 429],
      detail: {
        tags,
        summary: 'Your events after a cursor, oldest first; with wait, held until one is recorded',
        description:
          'Send next_after back as after to read on: none is missed or repeated. Kept 30 days. With wait (seconds) and nothing new, the request is answered as soon as a matching event is recorded, or with an empty page when the time runs out. ' +
          'An after that is not one of your events (or is older than 30 days): 422 param after; start again without it. Another account\'s site: 404 param site. ' +
          'An account holds at most 20 long polls at once: one more is 429 param wait with Retry-After (wait on fewer, with wider filters).',
        operationId: 'listEvents',
      },
    })
    .get('/events/next/', ({ principal, query, request }) => feed.next(principal, {
      after: query.after, types: query.types, site: query.site, timeoutSeconds: query.timeout_seconds ?? 30,
    }, request.signal), {
      scope: { scope: 'read', siteKeys: true },
      query: NextEventQuery,
      response: ok(NextEvent),
      errors: [404, 429],
      detail: {
        tags,
        summary: 'The first of your events after a cursor that matches, waiting up to timeout_seconds for it (null when none came)',
        description: 'One event at a time: send its id back as after for the next. The same filters and errors as listEvents.',
        operationId: 'waitForEvent',
      },
    })
