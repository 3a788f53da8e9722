/**
 * The off-box destination: a bucket (S3 and compatible services, drivers/offsite/s3.ts) or a
 * mounted folder (drivers/offsite/folder.ts) that holds encrypted copies of the archives, the
 * store and the certificates, so the box can be rebuilt from it (`berth restore`).
 *
 * Keys are relative to the configured prefix: segments of letters, digits, `.`, `_` and `-`
 * joined by `/`, never `.` or `..` (checkOffsiteKey; anything else throws before any I/O). Berth
 * names them (docs/operations.md, "Copies off the box"):
 *   archives/{site_id}/{archive_id}.tar.zst.age
 *   store/{yyyymmddThhmmssZ}-{rand}.db.zst.age
 *   tls/{yyyymmddThhmmssZ}-{rand}.tar.age
 *   manifests/{yyyymmddThhmmssZ}-{rand}.json.age
 *
 * Contracts, for every implementation:
 * - `put(key, body, hint?)` streams `body` to `key`; memory stays bounded whatever its size (S3:
 *   multipart past one part). The object appears whole or not at all: while the upload runs, and
 *   after it failed or the process died, `list` does not show it and `get` does not find it (an
 *   interrupted S3 multipart upload is aborted, or left for `sweep`). Putting an existing key
 *   replaces it. Transient failures (network, 5xx, throttling) are retried with back-off inside
 *   `put` before it throws; a body stream can be read once, so retries happen per part (S3) or
 *   the whole put throws OffsiteUnavailableError and the caller tries again later.
 * - `get(key)` answers the object's bytes as a stream. Throws OffsiteMissingError when absent.
 * - `list(prefix)` every complete object whose key starts with `prefix`, with its size and time.
 * - `delete(key)` removes it; absent is a no-op.
 * - `probe()` writes, reads back and deletes a small object under `probe/`: resolves when the
 *   destination accepts writes with these credentials, throws OffsiteUnavailableError otherwise.
 * - `sweep()` removes what interrupted uploads left (S3: incomplete multipart uploads under the
 *   prefix older than an hour; folder: `*.partial` files older than an hour). Never throws.
 * - Every failure other than OffsiteMissingError and InvalidOffsiteKeyError is an
 *   OffsiteUnavailableError whose `reason` says what to fix, in words a hoster can act on
 *   (never a secret).
 */
export interface OffsiteDestination {
  /** `s3://bucket/prefix` or `file:///path`, for logs and status (never credentials). */
  readonly describe: string
  put(key: string, body: ReadableStream<Uint8Array>, hint?: PutHint): Promise<{ sizeBytes: number }>
  get(key: string): Promise<ReadableStream<Uint8Array>>
  list(prefix: string): Promise<OffsiteObject[]>
  delete(key: string): Promise<void>
  probe(): Promise<void>
  sweep(): Promise<void>
}

/** What the caller knows of a body before it is read. */
export interface PutHint {
  /**
   * About how many bytes the body holds (at least as many, if not exact). An S3 upload has at
   * most 10,000 parts: with the size known the parts are made big enough, so an archive of a
   * large site is not refused for its size. Without it, the default part size sets the most.
   */
  expectedBytes?: number
}

export interface OffsiteObject {
  key: string
  sizeBytes: number
  /** When it was last written (ms since the epoch). */
  modifiedAt: number
}

export class OffsiteMissingError extends Error {}

export class InvalidOffsiteKeyError extends Error {}

/** Why the destination could not be used; `kind` for status and metrics, `message` for people. */
export type OffsiteFailureKind = 'unreachable' | 'credentials' | 'bucket' | 'full' | 'other'

export class OffsiteUnavailableError extends Error {
  constructor(readonly kind: OffsiteFailureKind, message: string) {
    super(message)
  }
}

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/

/** Throws InvalidOffsiteKeyError unless `key` is a well-formed key (a prefix may end with `/`). */
export function checkOffsiteKey(key: string, { prefix = false } = {}): void {
  const parts = key.split('/')
  if (prefix && parts.at(-1) === '') parts.pop()
  if (prefix && parts.length === 0) return
  if (parts.length === 0 || parts.length > 6 || !parts.every((p) => SEGMENT.test(p) && p !== '.' && p !== '..')) {
    throw new InvalidOffsiteKeyError(`Not an off-box key: ${JSON.stringify(key)}`)
  }
}
