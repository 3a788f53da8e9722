import { Elysia, type DocumentDecoration } from 'elysia'

/**
 * The error answers of the REST door, as the OpenAPI document lists them: each status with the
 * `error.code` values it carries. One shared response component per status (#/components/responses/…).
 */
export const ERROR_STATUSES = {
  400: { name: 'BadRequest', codes: ['VALIDATION_ERROR'], description: 'The body is not JSON, nests too deep, or its Content-Length is not a number.' },
  401: { name: 'Unauthorized', codes: ['UNAUTHORIZED'], description: 'No API key, or one that is unknown, revoked or expired. Send "Authorization: Bearer <key>".' },
  402: { name: 'PaymentDeclined', codes: ['PAYMENT_DECLINED'], description: 'The payment method was declined; nothing was charged or created.' },
  403: { name: 'Forbidden', codes: ['FORBIDDEN'], description: "The key lacks the scope, is bound to another site, or the plan does not include the feature." },
  404: { name: 'NotFound', codes: ['NOT_FOUND'], description: "Not found in your account. Another account's resources answer this too." },
  409: { name: 'Conflict', codes: ['CONFLICT', 'DISK_TOO_SMALL', 'DEPLOYMENT_RUNNING'], description: "The resource's state does not allow this now (provisioning, suspended, pending deletion, a job running); the message says what to do. DISK_TOO_SMALL: the new plan's disk is smaller than what the site's files use (error.details has the figures). DEPLOYMENT_RUNNING: enableGitPush while a deployment of the site is queued or running (error.details.deployment_id); retry once it has finished." },
  413: { name: 'PayloadTooLarge', codes: ['PAYLOAD_TOO_LARGE'], description: 'The body or a field in it is over its limit; error.param names the field.' },
  415: { name: 'UnsupportedMediaType', codes: ['UNSUPPORTED_MEDIA_TYPE'], description: 'The file is not text; read it another way.' },
  422: { name: 'ValidationError', codes: ['VALIDATION_ERROR', 'UNSAFE_ARCHIVE', 'UNREADABLE_ARCHIVE', 'BLOCKED_ADDRESS'], description: "A parameter is missing, unknown or invalid; error.param names it. A source deploySite refused (nothing queued): UNSAFE_ARCHIVE, a member of the archive with .., an absolute path, a link leaving the tree or a device (the message names it); UNREADABLE_ARCHIVE, not a tar.gz or zip; BLOCKED_ADDRESS, a git URL whose host resolves to a loopback, private, link-local or Berth's own address." },
  429: { name: 'RateLimited', codes: ['RATE_LIMITED'], description: 'Too many requests from this address; retry after the Retry-After header.' },
  500: { name: 'InternalError', codes: ['INTERNAL_ERROR'], description: 'A fault on our side; retry, and quote meta.request_id if it persists.' },
  502: { name: 'UpstreamError', codes: ['UPSTREAM_ERROR'], description: 'A service Berth called for you (the AI provider) failed or refused; the message says which and why.' },
  503: { name: 'Unavailable', codes: ['UNAVAILABLE'], description: 'The container engine or a site is not reachable right now; retry shortly.' },
  504: { name: 'UpstreamTimeout', codes: ['UPSTREAM_TIMEOUT'], description: 'A service Berth called for you (the AI provider) did not answer in time; retry, or send a shorter request.' },
  507: { name: 'InsufficientStorage', codes: ['INSUFFICIENT_STORAGE', 'DISK_FULL'], description: "No room on a disk for this. INSUFFICIENT_STORAGE: the server's free space is under the reserve it keeps for itself (no new sites, snapshots or backups until the hoster frees space; what exists keeps working). DISK_FULL: the site's own disk (its plan's disk_gb) is full; nothing was written; error.details has used_bytes and limit_bytes; delete files or scale to a plan with more disk. The message says what to do." },
} as const

export type ErrorStatus = keyof typeof ERROR_STATUSES

/** Operation extension carrying a route's own error statuses, read and removed by openapi.ts. */
export const ERRORS_EXTENSION = 'x-berth-errors'

/**
 * `{ errors: [402, 409] }` on a route lists the error statuses its operation can answer beyond
 * those its declarations already imply (openapi.ts adds 401/403 for keyed routes, 404/409 for
 * site routes, 422 everywhere (unknown query parameters), 400/413 for bodies, 429 for rate limits, 500).
 * The end-to-end tier checks every answer against the document, so a missing one fails a test.
 */
export const documentedErrors = () =>
  new Elysia({ name: 'documented-errors' }).macro({
    errors: (statuses: ErrorStatus[]) => ({
      detail: { [ERRORS_EXTENSION]: statuses } as DocumentDecoration,
    }),
  })
