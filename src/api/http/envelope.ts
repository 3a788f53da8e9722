import { Elysia, ValidationError as ElysiaValidationError } from 'elysia'
import type { Logger } from '../../lib/logger'
import { asDomainError, type OperationRef } from '../../domain/errors'
import { AppError, BadRequestError, fromDomainError, MethodNotAllowedError, NotFoundError } from './errors'
import { descriptionFor, REST_DESCRIPTION } from './doors'
import { toValidationError } from './validation'

/** Finds the methods a path answers to, so a wrong method gets 405 with `Allow` instead of 404. */
export type MethodLookup = (path: string) => string[]

/**
 * The envelope of design.md on every response: `{ok, data, meta}` on success, `{ok, error, meta}`
 * on failure, with `meta.request_id` also sent as `X-Request-Id`. Handlers return plain data;
 * Response objects (HTML pages, proxied sites) pass through untouched.
 */
export function envelope(deps: { log: Logger; methodsFor: MethodLookup; route: (ref: OperationRef, request: Request) => string }) {
  return new Elysia({ name: 'envelope' })
    .onRequest(({ set }) => {
      set.headers['x-request-id'] = crypto.randomUUID()
    })
    .onAfterHandle({ as: 'global' }, ({ response, set }) => {
      if (response instanceof Response) return response
      return { ok: true, data: response, meta: meta(set.headers['x-request-id'] as string) }
    })
    .onError({ as: 'global' }, ({ code, error, set, request, path }) => {
      const requestId = (set.headers['x-request-id'] as string | undefined) ?? crypto.randomUUID()
      const appError = classify(code, error, request, path, deps)
      if (appError.status >= 500) {
        deps.log.error('request failed', { request_id: requestId, method: request.method, path, error: errorDetails(error) })
      }
      return errorResponse(appError, requestId)
    })
}

export const meta = (requestId: string) => ({ request_id: requestId, timestamp: new Date().toISOString() })

/**
 * The success envelope around data already serialized as JSON, for hot routes that cache their
 * bytes (GET /plans/); `meta` is fresh on every call, as everywhere else.
 */
export function serializedResponse(dataJson: string, requestId: string, status = 200): Response {
  return new Response(`{"ok":true,"data":${dataJson},"meta":${JSON.stringify(meta(requestId))}}`, {
    status,
    headers: { 'content-type': 'application/json', 'x-request-id': requestId },
  })
}

/** The error envelope as a Response; also used outside Elysia (edge proxy, body limits). */
export function errorResponse(err: AppError, requestId: string): Response {
  const error = { code: err.code, message: err.message, param: err.param, ...(err.details ? { details: err.details } : {}) }
  const body = { ok: false, error, meta: meta(requestId) }
  return new Response(JSON.stringify(body), {
    status: err.status,
    headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId, ...err.headers },
  })
}

function classify(code: string | number, error: unknown, request: Request, path: string, deps: { methodsFor: MethodLookup; route: (ref: OperationRef, request: Request) => string }): AppError {
  const method = request.method
  if (error instanceof AppError) return error
  // The domain's errors, and the driver errors that mean something to the caller (design.md:
  // 503 when Docker is down).
  const domain = asDomainError(error)
  if (domain) return fromDomainError(domain, (ref) => deps.route(ref, request))
  // Elysia wraps what a parse hook throws (our 400 and 413) in its own ParseError.
  if (code === 'PARSE' && (error as { cause?: unknown }).cause instanceof AppError) return (error as { cause: AppError }).cause
  if (error instanceof ElysiaValidationError) return toValidationError(error, { operation: (ref) => deps.route(ref, request), description: descriptionFor(request) })
  switch (code) {
    case 'NOT_FOUND': {
      const allowed = deps.methodsFor(path)
      if (allowed.length > 0) return new MethodNotAllowedError(method, allowed)
      return new NotFoundError(`No route ${method} ${path}; see ${REST_DESCRIPTION} for the API's routes.`)
    }
    case 'PARSE':
      return new BadRequestError('The body is not valid JSON; send a JSON object with Content-Type: application/json.')
    case 'INVALID_COOKIE_SIGNATURE':
      return new BadRequestError('A cookie was tampered with; drop it and retry.')
  }
  return new AppError(500, 'INTERNAL_ERROR', 'Something went wrong on our side; retry, and quote meta.request_id if it keeps happening.')
}

function errorDetails(error: unknown) {
  if (error instanceof Error) return { name: error.name, message: error.message, stack: error.stack }
  return { value: String(error) }
}
