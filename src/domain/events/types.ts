/**
 * Every type of event Berth records (issue 41; docs/api.md, "Event types"). The list itself is in
 * core/enums.ts, where the store's schema can read it too.
 */
import { EVENT_TYPES, type EventType } from '../../core/enums'

export { EVENT_TYPES, type EventType }

const KNOWN = new Set<string>(EVENT_TYPES)

export function isEventType(value: string): value is EventType {
  return KNOWN.has(value)
}
