import { t } from 'elysia'
import { Body, DateTime, Query } from '../http/schemas'
import { FILE_LIMITS } from '../../domain/files/limits'
import { FileEntry, FileListing, FileContent, WrittenEntry, DeletedEntry } from '../../domain/files/views'
export { FileEntry, FileListing, FileContent, WrittenEntry, DeletedEntry }

const PATH_RULES =
  "Relative to the site user's home (the web root is public/); '' is the home itself. Refused with 422: a leading '/', any '..' segment, " +
  "backslashes, control characters and NUL, %XX sequences (send decoded paths), look-alikes of '.', '/' and '\\\\', more than 4096 bytes, and any symbolic link on the way."

const Path = (description = PATH_RULES) => t.String({ description })

export const ListQuery = Query({ path: t.Optional(Path(`${PATH_RULES} Default: the home.`)) })
export const ReadQuery = Query({ path: Path() })

export const WriteBody = Body({
  path: Path(),
  content: t.String({ description: `Text, stored as UTF-8; at most ${FILE_LIMITS.writeBytes} bytes once encoded (else 413).` }),
})

export const UploadBody = Body({
  path: Path(),
  content_b64: t.String({ description: `The file's bytes in standard base64 (RFC 4648 section 4; padding optional); at most ${FILE_LIMITS.uploadBytes} bytes once decoded (else 413).` }),
})

export const PathBody = Body({ path: Path() })
