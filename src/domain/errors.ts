import { RuntimeUnavailableError, SiteNotRunnableError, SiteRestartingError } from '../drivers/runtime/types'

/**
 * What went wrong, in the domain's words. Each door (REST, MCP) maps a kind to its own answer
 * once: the REST envelope's status and code (src/api/http/errors.ts), an MCP tool error.
 *
 * | kind             | REST                         |
 * | ---------------- | ---------------------------- |
 * | invalid          | 422 VALIDATION_ERROR         |
 * | unauthorized     | 401 UNAUTHORIZED             |
 * | payment_declined | 402 PAYMENT_DECLINED         |
 * | forbidden        | 403 FORBIDDEN                |
 * | not_found        | 404 NOT_FOUND                |
 * | conflict         | 409 CONFLICT                 |
 * | too_large        | 413 PAYLOAD_TOO_LARGE        |
 * | not_text         | 415 UNSUPPORTED_MEDIA_TYPE   |
 * | over_budget      | 429 RATE_LIMITED             |
 * | upstream_failed  | 502 UPSTREAM_ERROR           |
 * | unavailable      | 503 UNAVAILABLE              |
 * | upstream_timeout | 504 UPSTREAM_TIMEOUT         |
 * | insufficient_storage | 507 INSUFFICIENT_STORAGE |
 *
 * A `CodedError` (below) answers its own code instead of its kind's (`DISK_FULL`).
 */
export type ErrorKind = 'invalid' | 'unauthorized' | 'payment_declined' | 'forbidden' | 'not_found' | 'conflict' | 'too_large' | 'not_text' | 'over_budget' | 'upstream_failed' | 'unavailable' | 'upstream_timeout' | 'insufficient_storage'

/**
 * A next step an error message points to: an operation of the API by its operation id
 * (`scaleSite`), with the values of its parameters that are known. Each door renders it as
 * what its callers use: REST as `POST /sites/acme/scale/`, MCP as its tool's name.
 */
export interface OperationRef {
  readonly operation: string
  readonly params: Readonly<Record<string, string>>
}

/** A message: text with the operations it names, rendered by the door that answers. */
export type Message = readonly (string | OperationRef)[]

/** Names an operation in a message; see `say`. */
export const op = (operation: string, params: Record<string, string> = {}): OperationRef => ({ operation, params })

const isRef = (v: unknown): v is OperationRef => typeof v === 'object' && v !== null && 'operation' in v && 'params' in v

/**
 * Builds a message; interpolated `op(...)` values stay operations, anything else becomes text:
 * say`Site '${slug}' is scheduled for deletion; ${op('restoreSite', { tenant_slug: slug })} first.`
 */
export function say(strings: TemplateStringsArray, ...values: unknown[]): Message {
  const parts: (string | OperationRef)[] = []
  strings.forEach((text, i) => {
    if (text) parts.push(text)
    if (i < values.length) parts.push(isRef(values[i]) ? (values[i] as OperationRef) : String(values[i]))
  })
  return parts
}

/** Renders a message with `render` for its operations (each door passes its own). */
export function renderMessage(message: Message, render: (ref: OperationRef) => string): string {
  return message.map((part) => (typeof part === 'string' ? part : render(part))).join('')
}

/** The plain rendering, for logs and for callers that have no door: operations by their id. */
export const plainMessage = (message: Message) => renderMessage(message, (ref) => ref.operation)

/**
 * The domain's error: a kind, a message saying what to do next (one sentence), and the field at
 * fault (dotted for nested fields), or null when no single field is.
 */
export class DomainError extends Error {
  constructor(
    readonly kind: ErrorKind,
    readonly said: Message | string,
    readonly field: string | null = null,
  ) {
    super(typeof said === 'string' ? said : plainMessage(said))
  }
}

export const invalid = (field: string | null, message: Message | string) => new DomainError('invalid', message, field)
export const notFound = (message: Message | string, field: string | null = null) => new DomainError('not_found', message, field)
export const forbidden = (message: Message | string, field: string | null = null) => new DomainError('forbidden', message, field)
export const conflict = (message: Message | string, field: string | null = null) => new DomainError('conflict', message, field)
export const tooLarge = (message: Message | string, field: string | null = null) => new DomainError('too_large', message, field)
export const unauthorized = (message: Message | string) => new DomainError('unauthorized', message)
/** A service Berth calls (the AI provider) failed or answered nonsense: 502. */
export const upstreamFailed = (message: Message | string) => new DomainError('upstream_failed', message)
/** A service Berth calls (the AI provider) did not answer in time: 504. */
export const upstreamTimeout = (message: Message | string) => new DomainError('upstream_timeout', message)

/** A budget used up until `retryAfterSeconds` from now (a site's monthly AI tokens): 429 with Retry-After. */
export class OverBudgetError extends DomainError {
  constructor(message: Message | string, readonly retryAfterSeconds: number, field: string | null = null) {
    super('over_budget', message, field)
  }
}
/** A state that passes by itself (a site's container restarting): 409 with Retry-After. */
export class ConflictForNowError extends DomainError {
  constructor(message: Message | string, readonly retryAfterSeconds: number) {
    super('conflict', message)
  }
}
/**
 * A refusal a program tells apart by a code of its own, beyond its kind's status (a full disk:
 * 507 `DISK_FULL`; a plan whose disk is smaller than the files: 409 `DISK_TOO_SMALL`), with the
 * figures it is about in `details` (the REST envelope's `error.details`).
 */
export class CodedError extends DomainError {
  constructor(
    kind: ErrorKind,
    readonly code: string,
    said: Message | string,
    field: string | null,
    readonly details: Readonly<Record<string, number | string | null>>,
  ) {
    super(kind, said, field)
  }
}
export const paymentDeclined = (message: Message | string, field: string | null = 'payment_method_id') => new DomainError('payment_declined', message, field)
export const unavailable = (message: Message | string) => new DomainError('unavailable', message)
/** No room on a disk for what was asked (the box's own reserve, domain/room): 507. */
export const insufficientStorage = (message: Message | string, field: string | null = null) => new DomainError('insufficient_storage', message, field)

/**
 * The domain error a driver failure means for the caller, or null for a failure the caller
 * cannot act on (an internal error). Both doors call this before their own mapping.
 */
export function asDomainError(err: unknown): DomainError | null {
  if (err instanceof DomainError) return err
  // design.md: 503 when Docker is down; reads from the store keep working.
  if (err instanceof RuntimeUnavailableError) return unavailable('The container engine is not answering; retry in a minute.')
  // The store may say active while the container is down (just removed, restarting): the
  // reconcile pass brings it back within containers.reconcile_seconds.
  if (err instanceof SiteRestartingError) {
    const retry = SiteRestartingError.RETRY_AFTER_S
    return new ConflictForNowError(say`${err.message} Retry in ${retry} seconds; if it keeps restarting, its error log (${op('getSiteLogs', { tenant_slug: err.slug })} with type=error) says why it exits.`, retry)
  }
  if (err instanceof SiteNotRunnableError) return conflict(`${err.message} Berth is bringing it back; retry in half a minute.`)
  return null
}
