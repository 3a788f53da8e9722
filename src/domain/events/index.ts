/** The events area as others see it (docs/architecture.md, "Areas are modules"): the log, its types and its view. */
export { EVENT_RETENTION_DAYS, EventLog, newEventId, type EventInput } from './log'
export { EVENT_TYPES, isEventType, type EventType } from './types'
export type { EventRow } from '../../store/schema'
