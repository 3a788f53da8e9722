import { OffsiteMissingError, OffsiteUnavailableError, type OffsiteFailureKind } from './types'

/**
 * What an S3 failure means for the hoster: the error codes of the S3 API
 * (docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html, plus the few that compatible
 * services add) and the network errors of Bun's S3 client, sorted into the kinds of
 * OffsiteUnavailableError. Classified by code, never by message text.
 */
const KIND_OF_CODE: Record<string, OffsiteFailureKind> = {
  InvalidAccessKeyId: 'credentials',
  SignatureDoesNotMatch: 'credentials',
  AccessDenied: 'credentials',
  InvalidToken: 'credentials',
  ExpiredToken: 'credentials',
  AccountProblem: 'credentials',
  NoSuchBucket: 'bucket',
  AuthorizationHeaderMalformed: 'bucket',
  PermanentRedirect: 'bucket',
  IllegalLocationConstraintException: 'bucket',
  EntityTooLarge: 'full',
  QuotaExceeded: 'full',
  ServiceQuotaExceeded: 'full',
  InsufficientStorage: 'full',
  StorageFull: 'full',
  XMinioStorageFull: 'full',
  TooManyParts: 'full',
}

/**
 * Codes (or error names) worth trying again after a pause, shown as 'unreachable': the network,
 * the server's own trouble, throttling. TimeoutError is what fetch throws when its
 * AbortSignal.timeout fires: the deadline of our own requests (s3-uploads.ts), which on a loaded
 * box can fire before withDeadline's timer does.
 */
const TRANSIENT = new Set([
  'ConnectionRefused', 'ConnectionClosed', 'ConnectionReset', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN',
  'DNSResolveFailed', 'Timeout', 'TimedOut', 'TimeoutError', 'RequestTimeout', 'InternalError', 'ServiceUnavailable', 'SlowDown', 'OperationAborted',
  'Throttling', 'ThrottlingException', 'RequestLimitExceeded', 'BadGateway', 'GatewayTimeout', 'UnexpectedEOF',
])

/** What the hoster should do, per kind; `where` is `s3://bucket/prefix at host`, never a credential. */
function advice(kind: OffsiteFailureKind, code: string, where: string): string {
  switch (kind) {
    case 'credentials':
      return `${where} refused the credentials (${code}): check offsite.access_key_id and offsite.secret_access_key, and that the key may list, read, write and delete under the prefix`
    case 'bucket':
      return code === 'NoSuchBucket'
        ? `${where}: the bucket does not exist (${code}); create it, or fix the bucket name in offsite.url`
        : `${where}: the bucket is not where offsite.endpoint and offsite.region say (${code}); set the bucket's own region and endpoint`
    case 'full':
      return `${where} refuses more data (${code}): the account's quota or the server's disk is full; free space, raise the quota, or prune old copies`
    case 'unreachable':
      return `${where} cannot be reached (${code}): check offsite.endpoint, the network and the service's status; copies wait and are retried`
    default:
      return `${where} failed (${code})`
  }
}

/** The code of a failure from Bun's S3 client (S3Error.code), a socket (errno code), or ours. */
export function codeOf(err: unknown): string {
  const e = err as { code?: unknown; name?: unknown }
  return typeof e?.code === 'string' && e.code ? e.code : typeof e?.name === 'string' ? e.name : 'Error'
}

export function isTransient(err: unknown): boolean {
  if (err instanceof OffsiteUnavailableError) return err.kind === 'unreachable'
  return TRANSIENT.has(codeOf(err))
}

/**
 * The OffsiteUnavailableError (or OffsiteMissingError, passed through) for a failure at `where`.
 * `secrets` are blanked out of any text from the server, which should hold none anyway.
 */
export function s3Failure(err: unknown, where: string, secrets: readonly string[]): Error {
  if (err instanceof OffsiteUnavailableError || err instanceof OffsiteMissingError) return err
  const code = codeOf(err)
  const kind: OffsiteFailureKind = KIND_OF_CODE[code] ?? (TRANSIENT.has(code) ? 'unreachable' : 'other')
  let message = advice(kind, code, where)
  if (kind === 'other') message += `: ${(err as Error)?.message ?? String(err)}`
  for (const s of secrets) if (s) message = message.split(s).join('***')
  return new OffsiteUnavailableError(kind, message)
}

/** A stalled server: it accepted the connection and never answered. */
export class StalledError extends Error {
  readonly code = 'Timeout'
}

/**
 * `work` with a deadline: Bun's S3 client has no timeout of its own and waits forever on a server
 * that accepted the connection and never answers. The request may go on in the background; its
 * answer, if one ever comes, is dropped.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StalledError(`${what}: no answer within ${Math.round(ms / 1000)} s`)), ms)
  })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

export interface RetryPolicy {
  /** Tries in all, the first included. */
  attempts: number
  /** The first pause; each next one doubles, with up to 50 % random jitter. */
  firstDelayMs: number
}

/** Runs `attempt` until it succeeds, fails for good (not transient), or `policy.attempts` ran out. */
export async function withRetries<T>(policy: RetryPolicy, attempt: () => Promise<T>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt()
    } catch (err) {
      if (n >= policy.attempts || !isTransient(err)) throw err
      await Bun.sleep(policy.firstDelayMs * 2 ** (n - 1) * (1 + Math.random() / 2))
    }
  }
}
