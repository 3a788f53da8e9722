/**
 * Why a source (an uploaded archive, a git URL) was refused before anything of it reached a
 * site. The API turns each into its answer (src/domain/apps/intake.ts; docs/api.md, "Apps:
 * deploying a source", Refusals), `param` the field the source came in (`body`, or
 * `source.archive_base64` for an archive in JSON):
 *
 * - UnsafeSourceError: 422 `UNSAFE_ARCHIVE`: a member that would land outside the tree or is not
 *   a plain file, folder or link inside it; `member` names it (null when the archive's structure
 *   itself is refused).
 * - InvalidSourceError: 422 `UNREADABLE_ARCHIVE`: not a gzip tar or a zip, damaged, encrypted.
 * - SourceTooLargeError: 507 `DISK_FULL`, with the figures: the tree expands past the site's disk.
 * - TooManyFilesError: 422 `UNSAFE_ARCHIVE` (`error.details.max_files`): more members than allowed.
 * - InvalidGitSourceError: 422 `VALIDATION_ERROR` (param `source.git` or `source.ref`).
 */
export class UnsafeSourceError extends Error {
  constructor(readonly member: string | null, readonly reason: string) {
    super(`The archive was refused and nothing of it was deployed: ${reason}.`)
  }
}

export class InvalidSourceError extends Error {
  constructor(readonly reason: string) {
    super(`The upload could not be read as an archive: ${reason}.`)
  }
}

export class SourceTooLargeError extends Error {
  constructor(readonly limitBytes: number, readonly atLeastBytes: number, readonly member: string | null) {
    super(
      `The tree expands to at least ${atLeastBytes} bytes${member ? ` (at member ${JSON.stringify(member)})` : ''}, more than the ${limitBytes} bytes the site's disk has free; ` +
        'deploy a smaller tree (leave out build output and dependencies, which the build makes) free space on the site, or move it to a plan with a larger disk.',
    )
  }
}

export class TooManyFilesError extends Error {
  constructor(readonly limit: number, readonly member: string) {
    super(`The archive holds more than ${limit} files and folders (the limit was passed at member ${JSON.stringify(member)}); deploy a smaller tree (leave out node_modules, .venv and build output: the build makes them).`)
  }
}

/** A git URL or ref Berth will not fetch; `param` is the field at fault. */
export class InvalidGitSourceError extends Error {
  constructor(readonly param: 'source.git' | 'source.ref', message: string) {
    super(message)
  }
}
