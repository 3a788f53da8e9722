import { t, type Static } from 'elysia'
import { Nullable, Query, QueryInteger, Text } from '../http/schemas'
import { LogTypeSchema, SiteLog } from '../../domain/logs'
export { LogTypeSchema, SiteLog }

export const MAX_SEARCH_LENGTH = 200

export const LogQuery = Query({
  // The document's example asks for an app's log, which `process` goes with.
  type: t.Optional({ ...LogTypeSchema, examples: ['app'] }),
  lines: t.Optional(QueryInteger('lines', { minimum: 1, maximum: 500, default: 100, description: 'How many of the newest matching lines to return.' })),
  search: t.Optional(Text({ maxLength: MAX_SEARCH_LENGTH, description: 'Only lines containing this text (plain, case-sensitive substring).' })),
  process: t.Optional(t.String({ pattern: '^[a-z][a-z0-9_-]{0,29}$', description: 'With type=app: only the lines of this process (web, a worker\'s name, or berth for the supervisor\'s own).' })),
})
