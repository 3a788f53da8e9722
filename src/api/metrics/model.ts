import { t, type Static } from 'elysia'
import { Nullable, Query, QueryInteger } from '../http/schemas'
import { MetricsDay, SiteMetrics } from '../../domain/metrics'
export { MetricsDay, SiteMetrics }

export const MetricsQuery = Query({
  days: t.Optional(QueryInteger('days', { minimum: 1, maximum: 90, default: 7, description: 'How many UTC days to report, today included.' })),
})
