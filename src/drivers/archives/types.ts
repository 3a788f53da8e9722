/**
 * The archive store: where the bytes of site snapshots and backups live. Berth hands it finished
 * files (compressed tarballs of a site's home) under keys it chooses, and fetches them back for a
 * restore. The built-in `local` store keeps them in a folder; an object store (S3 and the like)
 * plugs in behind the same interface.
 *
 * Keys look like `{site_id}/{archive_id}.tar.zst`: segments of letters, digits, `.`, `_` and `-`
 * joined by `/`, never `.` or `..`; anything else throws InvalidArchiveKeyError before any I/O.
 *
 * Contracts, for every implementation:
 * - `put(key, fromFile)` stores the bytes of the local file `fromFile` under `key` and consumes
 *   the file (it no longer exists at `fromFile` once put resolves). The object is durable when
 *   put resolves, and appears whole or not at all: a crash mid-way never leaves a partial object
 *   under `key`. Putting an existing key replaces it (so a job that runs again is harmless).
 * - `get(key, toFile)` writes the object to the local file `toFile` (created or truncated).
 *   Throws ArchiveMissingError when there is no object under `key`.
 * - `read(key)` answers the object's bytes as a stream (memory bounded whatever its size) with
 *   their count, for its copy off the box. Throws ArchiveMissingError when there is no object
 *   under `key`.
 * - `delete(key)` removes the object; a missing key is a no-op (idempotent).
 * - `list(prefix)` returns every key starting with `prefix` (e.g. `{site_id}/`), in no particular
 *   order; for clean-up of what the store holds and the database no longer knows.
 * - Errors other than ArchiveMissingError and InvalidArchiveKeyError mean the store could not be
 *   used (disk full, network down); callers retry later.
 */
export interface ArchiveStore {
  /** `local`, or the name of the remote service. */
  readonly name: string
  put(key: string, fromFile: string): Promise<{ sizeBytes: number }>
  get(key: string, toFile: string): Promise<void>
  read(key: string): Promise<{ stream: ReadableStream<Uint8Array>; sizeBytes: number }>
  delete(key: string): Promise<void>
  list(prefix: string): Promise<string[]>
}

export class ArchiveMissingError extends Error {}

export class InvalidArchiveKeyError extends Error {}

/**
 * An archive refused before it was extracted into a site's home (drivers/archives/tar-members.ts):
 * a member outside `./`, under a name the restore keeps, written through a link, a device, or a
 * hard link to anything but an earlier member. The message says which member and why; nothing
 * was written.
 */
export class UnsafeArchiveError extends Error {}

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/

/** Throws InvalidArchiveKeyError unless `key` is a well-formed archive key (see ArchiveStore). */
export function checkArchiveKey(key: string, { prefix = false } = {}): void {
  const parts = key.split('/')
  if (prefix && parts.at(-1) === '') parts.pop()
  if (parts.length === 0 || parts.length > 4 || !parts.every((p) => SEGMENT.test(p) && p !== '.' && p !== '..')) {
    throw new InvalidArchiveKeyError(`Not an archive key: ${JSON.stringify(key)}`)
  }
}
