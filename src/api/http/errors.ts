import { CodedError, ConflictForNowError, OverBudgetError, renderMessage, type DomainError, type ErrorKind, type OperationRef } from '../../domain/errors'

/**
 * The REST door's errors: what the envelope (envelope.ts) answers with. The domain throws
 * DomainError (src/domain/errors.ts), mapped here once by its kind; the HTTP layer itself throws
 * these for what only HTTP has (a body that is not JSON, a wrong method, a rate limit). The table
 * is design.md's "Envelope, errors, status codes".
 */
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    /** Extra response headers, such as Retry-After. */
    readonly headers: Record<string, string> = {},
    /** Figures a program reads (`error.details`), for the few errors that carry them (CodedError). */
    readonly details: Readonly<Record<string, unknown>> | null = null,
  ) {
    super(message)
  }
}

export class BadRequestError extends AppError {
  constructor(message: string, param: string | null = null) {
    super(400, 'VALIDATION_ERROR', message, param)
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'Send a valid API key as "Authorization: Bearer <key>".') {
    super(401, 'UNAUTHORIZED', message, null, { 'www-authenticate': 'Bearer' })
  }
}

export class PaymentDeclinedError extends AppError {
  constructor(message: string, param: string | null = 'payment_method_id') {
    super(402, 'PAYMENT_DECLINED', message, param)
  }
}

export class ForbiddenError extends AppError {
  constructor(message: string, param: string | null = null) {
    super(403, 'FORBIDDEN', message, param)
  }
}

export class NotFoundError extends AppError {
  constructor(message: string, param: string | null = null) {
    super(404, 'NOT_FOUND', message, param)
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(method: string, allowed: string[]) {
    super(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed here; use ${allowed.join(' or ')}.`, null, { allow: allowed.join(', ') })
  }
}

export class ConflictError extends AppError {
  constructor(message: string, param: string | null = null) {
    super(409, 'CONFLICT', message, param)
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(message: string, param: string | null = null) {
    super(413, 'PAYLOAD_TOO_LARGE', message, param)
  }
}

export class UnsupportedMediaError extends AppError {
  constructor(message: string, param: string | null = null) {
    super(415, 'UNSUPPORTED_MEDIA_TYPE', message, param)
  }
}

export class ValidationError extends AppError {
  constructor(param: string | null, message: string) {
    super(422, 'VALIDATION_ERROR', message, param)
  }
}

export class RateLimitedError extends AppError {
  constructor(retryAfterSeconds: number, headers: Record<string, string>) {
    super(429, 'RATE_LIMITED', `Too many requests from this address; retry in ${retryAfterSeconds} seconds.`, null, {
      ...headers,
      'retry-after': String(retryAfterSeconds),
    })
  }
}

export class UnavailableError extends AppError {
  constructor(message: string) {
    super(503, 'UNAVAILABLE', message)
  }
}

/** The status and code of each domain error kind. */
const BY_KIND: Record<ErrorKind, { status: number; code: string }> = {
  invalid: { status: 422, code: 'VALIDATION_ERROR' },
  unauthorized: { status: 401, code: 'UNAUTHORIZED' },
  payment_declined: { status: 402, code: 'PAYMENT_DECLINED' },
  forbidden: { status: 403, code: 'FORBIDDEN' },
  not_found: { status: 404, code: 'NOT_FOUND' },
  conflict: { status: 409, code: 'CONFLICT' },
  too_large: { status: 413, code: 'PAYLOAD_TOO_LARGE' },
  not_text: { status: 415, code: 'UNSUPPORTED_MEDIA_TYPE' },
  over_budget: { status: 429, code: 'RATE_LIMITED' },
  upstream_failed: { status: 502, code: 'UPSTREAM_ERROR' },
  unavailable: { status: 503, code: 'UNAVAILABLE' },
  upstream_timeout: { status: 504, code: 'UPSTREAM_TIMEOUT' },
  insufficient_storage: { status: 507, code: 'INSUFFICIENT_STORAGE' },
}

/** A domain error as the REST door answers it; `route` names the operations its message points to. */
export function fromDomainError(err: DomainError, route: (ref: OperationRef) => string): AppError {
  const { status, code: kindCode } = BY_KIND[err.kind]
  const code = err instanceof CodedError ? err.code : kindCode
  const message = typeof err.said === 'string' ? err.said : renderMessage(err.said, route)
  const headers: Record<string, string> = err.kind === 'unauthorized' ? { 'www-authenticate': 'Bearer' } : err instanceof OverBudgetError || err instanceof ConflictForNowError ? { 'retry-after': String(err.retryAfterSeconds) } : {}
  return new AppError(status, code, message, err.field, headers, err instanceof CodedError ? err.details : null)
}
