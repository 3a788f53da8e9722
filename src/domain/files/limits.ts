/**
 * Size limits of the files API (docs/api.md, "Files"). Reads follow the spec (512 KB, text
 * only); writes and uploads are Berth's choice: large enough for any page, stylesheet, script or
 * image a site serves, small enough that one request cannot hold much memory (a body is read
 * whole before it is parsed).
 */
export const FILE_LIMITS = {
  /** GET files/read/: the spec's "maximum 512 KB". */
  readBytes: 524_288,
  /** POST files/write/: `content` in UTF-8 bytes. */
  writeBytes: 1_048_576,
  /** POST files/upload/: `content_b64` once decoded. */
  uploadBytes: 10_485_760,
  /** GET files/: entries of one folder, sorted by name; `truncated` says when there were more. */
  listEntries: 10_000,
} as const

/** Room in a body for the path, the field names and a JSON encoder's whims. */
const BODY_SLACK = 64 * 1024

/**
 * Bodies of the two routes that carry file content may exceed `server.max_body_bytes`:
 * - write: JSON may escape a byte of text as six (`\u001f`), so 6 x 1 MiB + slack;
 * - upload: base64 is 4 characters per 3 bytes, and some encoders escape `/` as `\/`, so
 *   4/3 x 10 MiB x 1.05 + slack (about 14.7 MB).
 * Past these the body parser answers too_large before reading further; within them, the service
 * checks the decoded size exactly and answers too_large naming the field.
 */
export const FILE_BODY_LIMITS = {
  write: { bytes: 6 * FILE_LIMITS.writeBytes + BODY_SLACK, param: 'content' },
  upload: { bytes: Math.ceil(((FILE_LIMITS.uploadBytes * 4) / 3) * 1.05) + BODY_SLACK, param: 'content_b64' },
} as const

const CONTENT_ROUTE = /^\/api\/v1\/sites\/[^/]+\/files\/(write|upload)\/?$/

/** The body limit of the route at `path`, when it is a files route that carries content. */
export function fileBodyLimit(path: string): { bytes: number; param: string } | undefined {
  const kind = CONTENT_ROUTE.exec(path)?.[1] as keyof typeof FILE_BODY_LIMITS | undefined
  return kind ? FILE_BODY_LIMITS[kind] : undefined
}
