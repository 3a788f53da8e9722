import { CloneType, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'

/**
 * The forms of the string formats that Berth's answers use, as anchored patterns: RFC 3339
 * date-times (Berth writes `toISOString()`'s) and UUIDs.
 */
const FORMAT_PATTERNS: Record<string, string> = {
  'date-time': '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?(Z|[+-]\\d{2}:\\d{2})$',
  uuid: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
}

/**
 * A compiled check of an answer against its route's schema, for answers that a route serializes
 * itself (a Response skips Elysia's per-response check): GET /sites/. Date-times and UUIDs are
 * checked by their form, a pattern compiled into the check, instead of by Elysia's format
 * functions, which parse every date again: they were two thirds of the check of a list of 100
 * sites (bench:lists, issue 22). Every other keyword is the schema's own.
 */
export function compileAnswerCheck<T extends TSchema>(schema: T): TypeCheck<T> {
  return TypeCompiler.Compile(withFormatPatterns(CloneType(schema)))
}

/** `schema` (a clone, changed in place) with each date-time or uuid format turned into its pattern. */
function withFormatPatterns<T>(schema: T): T {
  if (Array.isArray(schema)) {
    for (const item of schema) withFormatPatterns(item)
  } else if (schema !== null && typeof schema === 'object') {
    const node = schema as Record<string, unknown>
    const pattern = typeof node.format === 'string' ? FORMAT_PATTERNS[node.format] : undefined
    if (pattern !== undefined && node.pattern === undefined) {
      delete node.format
      node.pattern = pattern
    }
    for (const value of Object.values(node)) withFormatPatterns(value)
  }
  return schema
}
