import { Elysia } from 'elysia'
import { BadRequestError, PayloadTooLargeError } from './errors'

/** Whether the route at a path reads a body of this media type itself, as a stream (deploySite's archives). */
export type StreamedRoute = (path: string, mediaType: string) => boolean

/** The request's media type, lowercased, without parameters ('' when none). */
export const mediaType = (request: Request) => (request.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase()

/** A larger body limit for the route at a path (the files API's write and upload), or none. */
export type RouteBodyLimit = (path: string) => { bytes: number; param: string } | undefined

/**
 * Parses every request body as JSON, whatever its Content-Type (agents often forget the header),
 * after decoding it as strict UTF-8 (400 for any other bytes),
 * enforcing a byte limit before the body is read when Content-Length is given and while it is read
 * when it is chunked. An empty body is `{}`, so routes whose fields are all optional need none.
 * `routeLimit` raises the limit for the few routes that carry file content; their 413 names
 * the field that holds it.
 */
export function jsonBody(limitBytes: number, routeLimit: RouteBodyLimit = () => undefined, formRoute: (path: string) => boolean = () => false, streamedRoute: StreamedRoute = () => false) {
  return new Elysia({ name: 'json-body' }).onParse({ as: 'global' }, async ({ request, path }) => {
    if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return
    // A route that takes a binary body of its own type (deploySite's archive) reads it itself,
    // streamed; its validated body is then the empty object.
    if (streamedRoute(path, mediaType(request))) return {}
    const route = routeLimit(path)
    const text = await readLimited(request, route ? Math.max(route.bytes, limitBytes) : limitBytes, route?.param ?? null)
    // The one HTML form Berth serves (the test processor's payment page) posts url-encoded
    // fields; only its route reads them, and only when the form says that is what it sends.
    if (formRoute(path) && (request.headers.get('content-type') ?? '').startsWith('application/x-www-form-urlencoded')) {
      return Object.fromEntries(new URLSearchParams(text))
    }
    if (text.trim() === '') return {}
    if (nestingDepth(text) > MAX_DEPTH) {
      throw new BadRequestError(`The body nests arrays or objects more than ${MAX_DEPTH} levels deep; no route takes anything near that.`)
    }
    try {
      return JSON.parse(text)
    } catch (err) {
      throw new BadRequestError(`The body is not valid JSON (${(err as Error).message}); send a JSON object with Content-Type: application/json.`)
    }
  })
}

async function readLimited(request: Request, limit: number, param: string | null): Promise<string> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    if (!/^\d+$/.test(declared)) throw new BadRequestError('Content-Length must be a whole number of bytes.')
    if (Number(declared) > limit) throw tooLarge(`${declared} bytes`, limit, param)
    return utf8(new Uint8Array(await request.arrayBuffer()))
  }
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      await reader.cancel()
      throw tooLarge(`over ${limit} bytes`, limit, param)
    }
    chunks.push(value)
  }
  return utf8(Buffer.concat(chunks))
}

/**
 * The body as text, strictly: bytes that are not UTF-8 answer 400 instead of being decoded with
 * U+FFFD replacements and acted on (a folder named with replacement characters). A leading
 * UTF-8 byte order mark is dropped, as JSON parsers may (RFC 8259 section 8.1).
 */
function utf8(bytes: Uint8Array): string {
  try {
    return STRICT_UTF8.decode(bytes)
  } catch {
    throw new BadRequestError('The body is not valid UTF-8; send JSON text encoded as UTF-8.')
  }
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Deeper nesting than any route accepts. Checked on the text before parsing: validators and
 * error reporters recurse per level, and thousands of levels overflow their stack (seen with a
 * 5,000-deep array: a 500 from the validator's error mapper).
 */
const MAX_DEPTH = 64

/** Deepest bracket nesting in JSON text, ignoring brackets inside strings; linear time. */
export function nestingDepth(text: string): number {
  let depth = 0
  let max = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === 92) i++ // backslash: skip the escaped character
      else if (c === 34) inString = false
    } else if (c === 34) inString = true
    else if (c === 91 || c === 123) max = Math.max(max, ++depth)
    else if (c === 93 || c === 125) depth--
  }
  return max
}

const tooLarge = (size: string, limit: number, param: string | null) =>
  new PayloadTooLargeError(`The body is ${size}; this route accepts at most ${limit} bytes. Send a smaller body.`, param)
