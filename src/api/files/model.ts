import { t } from 'elysia'
import { Body, checkedByService, DateTime, Query } from '../http/schemas'
import { ENTRY_PATH_PATTERN, FILE_PATH_PATTERN, PATH_MAX_LENGTH } from '../http/path-patterns'
import { DeletedEntry, FILE_LIMITS, FileContent, FileEntry, FileListing, WrittenEntry } from '../../domain/files'
export { FileEntry, FileListing, FileContent, WrittenEntry, DeletedEntry }

const PATH_RULES =
  "Relative to the site user's home (the web root is public/); '' is the home itself. Refused with 422: a leading '/', any '..' segment, " +
  "backslashes, control characters and NUL, %XX sequences (send decoded paths), look-alikes of '.', '/' and '\\\\', more than 4096 bytes, and any symbolic link on the way."

/**
 * The rules as a pattern and a length too (path-patterns.ts), for the document; the service
 * checks them and names what is wrong (the length in UTF-8 bytes, which a schema cannot count).
 */
const Path = (description = `${PATH_RULES} It names a file or folder beneath the home, not the home itself.`, examples?: string[], pattern = ENTRY_PATH_PATTERN) =>
  t.String({ description, ...(examples ? { examples } : {}), ...checkedByService({ pattern, maxLength: PATH_MAX_LENGTH }) })

export const ListQuery = Query({ path: t.Optional(Path(`${PATH_RULES} Default: the home.`, ['public'], FILE_PATH_PATTERN)) })
export const ReadQuery = Query({ path: Path() })

export const WriteBody = Body({
  path: Path(),
  content: t.String({ description: `Text, stored as UTF-8; at most ${FILE_LIMITS.writeBytes} bytes once encoded (else 413).` }),
})

export const UploadBody = Body({
  path: Path(),
  content_b64: t.String({ description: `The file's bytes in standard base64 (RFC 4648 section 4; padding optional); at most ${FILE_LIMITS.uploadBytes} bytes once decoded (else 413).` }),
})

/**
 * Make a folder, delete a file or folder. The examples name a folder of their own: the other
 * routes' example is the page public/index.html, which a folder of that name would break.
 */
export const MkdirBody = Body({ path: Path(undefined, ['public/images']) })
export const DeleteBody = Body({ path: Path(undefined, ['public/images']) })
