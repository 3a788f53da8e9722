import type { ValidationError as ElysiaValidationError } from 'elysia'
import { renderSchemaOps, type DoorWords } from './doors'
import { ValidationError } from './errors'
import { notPlainText, QUERY_PARAM, TEXT_PATTERN, textLengthOf } from './schemas'

interface SchemaLike {
  type?: string
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  default?: unknown
  anyOf?: SchemaLike[]
  enum?: unknown[]
  const?: unknown
  items?: SchemaLike
  minItems?: number
  properties?: Record<string, unknown>
  error?: string
  description?: string
  [QUERY_PARAM]?: string
}

interface ValueErrorLike {
  path: string
  value: unknown
  schema: SchemaLike
  message: string
}

/**
 * Turns Elysia's validation failure into our 422 with `param` naming the field: dotted for nested
 * objects (`contact.phone`), the array's own name for a bad element (`scopes`). The message says
 * what a valid value looks like, so the caller can fix it without reading the docs.
 */
export function toValidationError(err: ElysiaValidationError, words: DoorWords): ValidationError {
  const first = (err.all?.[0] ?? err.valueError) as ValueErrorLike | undefined
  if (!first) return new ValidationError(null, `The request is not valid; check it against ${words.description}.`)
  const segments = first.path.split('/').filter(Boolean)
  const isIndex = (s: string) => /^\d+$/.test(s)
  const paramSegments = segments.filter((s) => !isIndex(s))
  const param = paramSegments.length > 0 ? paramSegments.join('.') : null
  const label = segments.length > 0 ? segments.reduce((acc, s) => (isIndex(s) ? `${acc}[${s}]` : acc ? `${acc}.${s}` : s), '') : null
  const named = first.schema?.[QUERY_PARAM]
  if (label === null && named) return new ValidationError(named, describe(named, first.value, first.schema, 'query', words))
  const fields = Object.keys(first.schema?.properties ?? {})
  if (label === null) {
    if (err.type === 'query') return new ValidationError(null, `The query string is not valid; send name=value pairs (see ${words.description} for the accepted query parameters).`)
    if (fields.length === 0) return new ValidationError(null, 'This route takes no body; send none, or {}.')
    return new ValidationError(null, `The body must be a JSON object with the fields ${fields.join(', ')}, such as {"${fields[0]}": ...}.`)
  }
  // An unexpected property shows up as an error on the parent with the property in the value.
  if (first.message.toLowerCase().includes('unexpected property') || first.message.toLowerCase().includes('additional')) {
    const what = err.type === 'query' ? 'query parameter' : 'field'
    if (err.type === 'body' && fields.length === 0 && segments.length === 1) return new ValidationError(param, `This route takes no body; remove the field '${label}' (send none, or {}).`)
    return new ValidationError(param, `Unknown ${what} '${label}'; remove it (see ${words.description} for the accepted ${what}s).`)
  }
  return new ValidationError(param, describe(label, first.value, first.schema, err.type, words))
}

function describe(label: string, value: unknown, declared: SchemaLike, where: string, words: DoorWords): string {
  // Elysia validates a query integer that is not a number (`lines=ten`) against its own union of
  // "integer-like string" and the declared integer: describe the declared one.
  const schema = declared.type === undefined ? declared.anyOf?.find((s) => s.type === 'integer' || s.type === 'number') ?? declared : declared
  const field = `${where === 'query' ? 'Query parameter' : where === 'params' ? 'Path parameter' : 'Field'} '${label}'`
  const got = value === undefined ? '' : ` (got ${preview(value)})`
  if (schema.error) return `${field} ${renderSchemaOps(schema.error, words)}${got}.`
  // A path segment with broken percent-encoding (%ZZ) reaches validation as null.
  if (where === 'params' && value === null) return `${field} is not valid percent-encoding; encode it with encodeURIComponent.`
  if (value === undefined) return `${field} is required.`
  const choices = literalChoices(schema)
  if (choices) return `${field} must be one of ${choices.join(', ')}${got}.`
  switch (schema.type) {
    case 'string':
      if (typeof value !== 'string') return `${field} must be a string${got}.`
      const text = textLengthOf(schema)
      if ((text || schema.pattern === TEXT_PATTERN || schema.format === 'email') && notPlainText(value)) return `${field} must be plain text: no control characters (NUL, tab, newline, ESC...) and no unpaired surrogates${got}.`
      // A Text field's pattern counts characters (an emoji is one): say which bound it missed.
      const characters = [...value].length
      if (text && characters < text.minLength) return text.minLength === 1 ? `${field} must not be empty.` : `${field} must be at least ${text.minLength} characters${got}.`
      if (text && characters > text.maxLength) return `${field} must be at most ${text.maxLength} characters (got ${characters}).`
      if (schema.format === 'uuid') return `${field} must be a UUID such as 123e4567-e89b-42d3-a456-426614174000${got}.`
      if (schema.format === 'email') return `${field} must be an email address such as ada@example.com: ASCII letters, digits and !#$%&'*+/=?^_\`{|}~- in dot-separated words before the @, a domain name of two labels or more after it${got}.`
      if (schema.minLength !== undefined && value.length < schema.minLength) return schema.minLength === 1 ? `${field} must not be empty.` : `${field} must be at least ${schema.minLength} characters${got}.`
      if (schema.maxLength !== undefined && value.length > schema.maxLength) return `${field} must be at most ${schema.maxLength} characters (got ${value.length}).`
      return `${field} has the wrong format${schema.pattern ? `; it must match ${schema.pattern}` : ''}${got}.`
    case 'integer':
    case 'number': {
      // `?lines=`: refused, not taken as the default (docs/api.md, Query parameters).
      if (value === '' && where === 'query' && schema.default !== undefined) {
        return `${field} is empty; send a whole number from ${schema.minimum} to ${schema.maximum}, or leave it out for the default ${String(schema.default)}.`
      }
      const range = schema.minimum !== undefined && schema.maximum !== undefined ? ` from ${schema.minimum} to ${schema.maximum}` : ''
      return `${field} must be ${schema.type === 'integer' ? 'an integer' : 'a number'}${range}${got}.`
    }
    case 'boolean':
      return `${field} must be true or false${got}.`
    case 'array': {
      const inner = schema.items ? literalChoices(schema.items) : undefined
      if (Array.isArray(value) && schema.minItems !== undefined && value.length < schema.minItems) {
        // `scopes` holds scopes: the field's name says what an item is.
        const item = label.replace(/s$/, '')
        return `${field} must hold at least ${schema.minItems === 1 ? `one ${item}` : `${schema.minItems} of them`}${inner ? ` (${inner.join(', ')})` : ''}${got}.`
      }
      return `${field} must be an array${inner ? ` of ${inner.join(', ')}` : ''}${got}.`
    }
    case 'object':
      return `${field} must be an object${got}.`
  }
  return `${field} is not valid${got}.`
}

function literalChoices(schema: SchemaLike): string[] | undefined {
  if (schema.enum) return schema.enum.map(String)
  if (schema.anyOf?.length && schema.anyOf.every((s) => s.const !== undefined)) return schema.anyOf.map((s) => String(s.const))
  return undefined
}

function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 40 ? `${text.slice(0, 37)}...` : text
}
