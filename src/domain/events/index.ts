/** The events area as others see it (docs/architecture.md, "Areas are modules"): the log, its feed, its types and views. */
export { EVENT_RETENTION_DAYS, EventLog, newEventId, type EventInput } from './log'
export { DEFAULT_LIMIT, EventFeed, MAX_LIMIT, MAX_WAIT_SECONDS, type EventReader, type FeedQuery, type SiteOfSlug } from './feed'
export { EVENT_TYPES, isEventType, type EventType } from './types'
export { Event, EventPage, EventTypeSchema, NextEvent, viewOf, type EventPageView, type EventView } from './views'
export type { EventRow } from '../../store/schema'
