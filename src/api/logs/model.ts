import { t, type Static } from 'elysia'
import { Nullable, Query, QueryInteger, Text } from '../http/schemas'
import { LogTypeSchema, SiteLog } from '../../domain/logs'
export { LogTypeSchema, SiteLog }

export const MAX_SEARCH_LENGTH = 200

export const LogQuery = Query({
  type: t.Optional(LogTypeSchema),
  lines: t.Optional(QueryInteger('lines', { minimum: 1, maximum: 500, default: 100, description: 'How many of the newest matching lines to return.' })),
  search: t.Optional(Text({ maxLength: MAX_SEARCH_LENGTH, description: 'Only lines containing this text (plain, case-sensitive substring).' })),
})
