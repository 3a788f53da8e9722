import { t } from 'elysia'
import { DEFAULT_LIMIT, MAX_LIMIT, MAX_WAIT_SECONDS } from '../../domain/events'
import { Query, QueryInteger } from '../http/schemas'

const after = t.Optional(t.String({ maxLength: 100, description: 'The id of the last event you received (next_after of the previous page): only later events come. Without it: from the oldest kept (30 days).', examples: ['evt_5f1c0a9e3b7d4c2a8e6f0b1d'] }))
const types = t.Optional(t.String({ maxLength: 2000, description: 'Only these event types, separated by commas (site.down,site.up); all without it.', examples: ['deployment.succeeded,deployment.failed'] }))
const site = t.Optional(t.String({ maxLength: 100, description: "Only the events of this site (its slug). A site-scoped key always sees its own site's only.", examples: ['my-blog'] }))

export const EventsQuery = Query({
  after,
  types,
  site,
  limit: t.Optional(QueryInteger('limit', { minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, description: `How many events at most (1 to ${MAX_LIMIT}).` })),
  wait: t.Optional(QueryInteger('wait', { minimum: 0, maximum: MAX_WAIT_SECONDS, default: 0, description: `When no event matches yet, hold the request up to this many seconds (0 to ${MAX_WAIT_SECONDS}) and answer as soon as one is recorded; an empty page when none came.` })),
})

export const NextEventQuery = Query({
  after,
  types,
  site,
  timeout_seconds: t.Optional(QueryInteger('timeout_seconds', { minimum: 0, maximum: MAX_WAIT_SECONDS, default: 30, description: `How long to wait for a matching event (0 to ${MAX_WAIT_SECONDS} seconds); event is null when none came.` })),
})
