import { Type, type IntegerOptions, type TProperties } from '@sinclair/typebox'
import { t, type TSchema } from 'elysia'
import { EMAIL_PATTERN } from './name-patterns'

/** `meta` of every response. */
export const Meta = t.Object({
  request_id: t.String({ format: 'uuid', description: 'Also sent as the X-Request-Id header; quote it when reporting a problem.' }),
  timestamp: t.String({ format: 'date-time' }),
})

/** The success envelope around `data`; used as the response schema of every JSON route. */
export const Envelope = <T extends TSchema>(data: T) => t.Object({ ok: t.Literal(true), data, meta: Meta })

/** Every `error.code` the API answers with. */
export const ERROR_CODES = ['VALIDATION_ERROR', 'UNAUTHORIZED', 'PAYMENT_DECLINED', 'FORBIDDEN', 'NOT_FOUND', 'METHOD_NOT_ALLOWED', 'CONFLICT', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'RATE_LIMITED', 'INTERNAL_ERROR', 'UPSTREAM_ERROR', 'UNAVAILABLE', 'UPSTREAM_TIMEOUT', 'INSUFFICIENT_STORAGE', 'DISK_FULL', 'DISK_TOO_SMALL', 'UNSAFE_ARCHIVE', 'UNREADABLE_ARCHIVE', 'BLOCKED_ADDRESS', 'DEPLOYMENT_RUNNING']

/** The error envelope; each operation's error answers (#/components/responses/...) use it. */
export const ErrorEnvelope = t.Object({
  ok: t.Literal(false),
  error: t.Object({
    code: t.Unsafe<string>({ type: 'string', enum: ERROR_CODES, description: 'What kind of failure: one value per status (see each operation\'s error answers).' }),
    message: t.String({ description: 'What went wrong and what to do next, in one sentence.' }),
    param: t.Union([t.String(), t.Null()], { description: 'The offending parameter, dotted for nested fields (contact.phone); null when no single parameter is at fault.' }),
    details: t.Optional(t.Record(t.String(), t.Union([t.Number(), t.String(), t.Null()]), { description: 'The figures of DISK_FULL (used_bytes, limit_bytes, available_bytes) DISK_TOO_SMALL (used_bytes, wanted_bytes, new_plan) and DEPLOYMENT_RUNNING (deployment_id); absent on other errors.' })),
  }),
  meta: Meta,
})

/**
 * The response schema of a JSON route: `{ 200: Envelope(data) }` (or 201) at run time, which is
 * what Elysia validates and the OpenAPI document shows. Handlers return the bare data and the
 * envelope plugin wraps it before validation, so the type handlers are checked against is the
 * data's: the one place where the static type and the schema object differ on purpose.
 */
export function ok<T extends TSchema>(data: T): { 200: T }
export function ok<T extends TSchema>(data: T, status: 201): { 201: T }
export function ok<T extends TSchema>(data: T, status: 200 | 201 = 200) {
  return { [status]: Envelope(data) }
}

export { DateTime, Nullable, Uuid } from '../../domain/schema'

/**
 * A query string of a route that takes parameters. An unknown one is refused with 422 naming it,
 * so a typo (`include_revoke`) fails loudly instead of quietly changing the answer. Routes that
 * take no parameters declare no query schema, and refuse any query parameter (strict-query.ts).
 */
export const Query = <T extends TProperties>(properties: T) => t.Object(properties, { additionalProperties: false })

/** Schema keyword naming a query parameter inside its own schema (see QueryInteger). */
export const QUERY_PARAM = 'x-query-param'

/**
 * An integer query parameter. Elysia decodes it from the query string and then checks the number
 * on its own, so a range error (`lines=0`) arrives without the parameter's path; the name stored
 * in the schema lets validation.ts still answer `param: "lines"`. The default (within the range)
 * is what a request without the parameter gets; openapi.ts publishes the parameter as a plain
 * bounded integer.
 */
export const QueryInteger = (name: string, options: { minimum: number; maximum: number; default: number; description?: string }) =>
  t.Integer({ ...options, [QUERY_PARAM]: name })

/**
 * An integer in a JSON body. Elysia's t.Integer also takes a numeric string ("3600") and converts
 * it; a JSON body says what it means, so a string there is refused with 422 like any wrong type.
 */
export const JsonInteger = (options: IntegerOptions) => Type.Integer(options)

/**
 * A request body: unknown fields are refused with 422 naming the field, so a typo such as
 * `scope` for `scopes` fails loudly instead of being ignored.
 */
export const Body = <T extends TProperties>(properties: T, options: { description?: string; allOf?: ServiceRule[] } = {}) =>
  t.Object(properties, { ...options, additionalProperties: false })

/** A JSON Schema condition (`if`/`then`, `required`, `properties`...) of a request. */
export type ServiceRule = Record<string, unknown>

/**
 * Rules the service checks itself, with messages more specific than a schema's (which record
 * type takes which value, a .ca name's legal type, the form of an SSH key): published in the
 * document as `allOf`, which the request validator (TypeBox) does not evaluate, so the service's
 * message is the one a caller gets. src/api/openapi-rules.test.ts holds that document and server
 * agree on a table of inputs. Spread into a schema's options: `t.String({ ...checkedByService(...) })`.
 */
export const checkedByService = (...rules: ServiceRule[]) => ({ allOf: rules.map(openCondition) })

/**
 * A condition speaks only of the fields it names: each of its object subschemas says so with
 * `additionalProperties: true` (the default), because linters that close every object schema
 * they meet (Redocly's example checks) would otherwise read `then: {properties: {value: ...}}`
 * as refusing the body's other fields.
 */
function openCondition(rule: ServiceRule): ServiceRule {
  const open: ServiceRule = { ...rule }
  for (const key of ['if', 'then', 'else'] as const) if (isRule(open[key])) open[key] = openCondition(open[key])
  if (Array.isArray(open.allOf)) open.allOf = (open.allOf as ServiceRule[]).map(openCondition)
  if ((open.properties !== undefined || open.required !== undefined) && open.additionalProperties === undefined) open.additionalProperties = true
  return open
}

const isRule = (value: unknown): value is ServiceRule => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The body of a route that takes none: no body, or `{}`. Any field is refused with 422 naming it,
 * as on every other route, so that `DELETE /sites/{slug}/delete/` with `{"dry_run": true}` fails
 * instead of deleting the site.
 */
export const NoBody = Body({}, { description: 'None: send no body, or {}.' })

/**
 * Plain text (names, labels, identifiers, emails): no control characters (C0 including tab and
 * newline, DEL, C1) and no unpaired UTF-16 surrogates (`\ud800` in JSON), which would print as
 * garbage, reach logs as escape sequences, or turn into U+FFFD on the way to storage. 422 naming
 * the field otherwise. The pattern reads the same with and without the regex `u` flag: the
 * request validator compiles patterns without it (UTF-16 code units), so a pair of surrogates
 * (an emoji) is matched as a pair.
 */
export const TEXT_PATTERN = '^(?:[^\\u0000-\\u001F\\u007F-\\u009F\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF])*$'
const TEXT_REGEX = new RegExp(TEXT_PATTERN)

/**
 * The same rule as the published document states it (openapi.ts puts it in place of
 * TEXT_PATTERN): over code points, as JSON Schema reads a pattern (ECMA-262 with the `u` flag,
 * and Python's and Rust's engines), where an emoji is one character and any surrogate code point
 * is one a UTF-8 body cannot carry. TEXT_PATTERN's second branch matches two surrogate code
 * points there, a string no JSON text decodes to, which generators then produce (issue 36).
 */
export const PUBLISHED_TEXT_PATTERN = '^[^\\u0000-\\u001F\\u007F-\\u009F\\uD800-\\uDFFF]*$'

/** True when `value` holds a character `Text` refuses (validation.ts names the reason). */
export const notPlainText = (value: string) => !TEXT_REGEX.test(value)

/**
 * Schema keyword holding a Text field's length in characters (code points, as JSON Schema counts
 * them): the request validator counts UTF-16 code units for minLength and maxLength, so an emoji
 * would count twice. The pattern counts the characters instead, and openapi.ts states the
 * lengths as minLength and maxLength (issue 36).
 */
export const TEXT_LENGTH = 'x-text-length'

/** The plain-text rule and its length, in characters, for a validator that reads UTF-16 code units. */
const textPattern = (min: number, max: number) => `^(?:[^\\u0000-\\u001F\\u007F-\\u009F\\uD800-\\uDFFF]|[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]){${min},${max}}$`

export const Text = ({ minLength = 0, maxLength, ...options }: { minLength?: number; maxLength: number; description?: string; examples?: string[] }) =>
  t.String({ ...options, pattern: textPattern(minLength, maxLength), [TEXT_LENGTH]: { minLength, maxLength } })

/** The length a Text field's schema states, if it is one. */
export const textLengthOf = (schema: object) => (schema as Record<string, unknown>)[TEXT_LENGTH] as { minLength: number; maxLength: number } | undefined

/**
 * An email address: the validator's `email` format, and the same rule as a pattern
 * (name-patterns.ts EMAIL_PATTERN) so that the document states it; plain text by construction.
 */
export const Email = (options: { minLength?: number; description?: string; examples?: string[] } = {}) =>
  t.String({ maxLength: 254, ...options, format: 'email', pattern: EMAIL_PATTERN })
