import { Type as t, type Static } from '@sinclair/typebox'
import { EventTypeSchema } from '../../core/enums'
import { iso } from '../../lib/clock'
import type { EventRow } from '../../store/schema'
import { DateTime, Nullable } from '../schema'

export { EventTypeSchema }

/** One event as the API shows it. */
export const Event = t.Object({
  id: t.String({ pattern: '^evt_[0-9a-f]{24}$', description: 'The event\'s id: what `after` takes, and the `webhook-id` of its deliveries.', examples: ['evt_5f1c0a9e3b7d4c2a8e6f0b1d'] }),
  type: EventTypeSchema,
  created_at: DateTime(),
  account_id: t.String({ description: 'The account it belongs to.' }),
  site: Nullable(t.String({ description: 'The slug of the site it is about (as it was then, kept after the site is gone); null for an account\'s event.', examples: ['my-blog'] })),
  data: t.Record(t.String(), t.Unknown(), { description: 'The object as the API shows it when the event was recorded (per type: docs/api.md, "Event types"); never a secret.' }),
}, {
  examples: [{
    id: 'evt_5f1c0a9e3b7d4c2a8e6f0b1d', type: 'deployment.succeeded', created_at: '2026-11-29T14:00:00.000Z', account_id: '0b6f3c1e-5d2a-4e8b-9c7f-1a2b3c4d5e6f', site: 'my-blog',
    data: { id: '7d3f1b2a-9c8e-4f6d-a5b4-3c2d1e0f9a8b', status: 'succeeded' },
  }],
})
export type EventView = Static<typeof Event>

/** A page of the log: oldest first; `next_after` is the cursor to send as `after` for what comes next. */
export const EventPage = t.Object({
  events: t.Array(Event),
  has_more: t.Boolean({ description: 'More events match after this page: ask again at once with after=next_after.' }),
  next_after: Nullable(t.String({ description: 'The cursor for the next request (the last event\'s id, or the `after` you sent when none came); null when there were none and you sent no `after`.', examples: ['evt_5f1c0a9e3b7d4c2a8e6f0b1d'] })),
})
export type EventPageView = Static<typeof EventPage>

/** The first matching event after the cursor, or null when none came in the time. */
export const NextEvent = t.Object({
  event: Nullable(Event),
})

export function viewOf(row: EventRow): EventView {
  return { id: row.id, type: row.type, created_at: iso(row.createdAt), account_id: row.accountId, site: row.siteSlug, data: JSON.parse(row.data) as Record<string, unknown> }
}
