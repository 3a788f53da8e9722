import { Elysia } from 'elysia'
import { BadRequestError, PayloadTooLargeError } from './errors'

/**
 * Parses every request body as JSON, whatever its Content-Type (agents often forget the header),
 * enforcing a byte limit before the body is read when Content-Length is given and while it is read
 * when it is chunked. An empty body is `{}`, so routes whose fields are all optional need none.
 */
export function jsonBody(limitBytes: number) {
  return new Elysia({ name: 'json-body' }).onParse({ as: 'global' }, async ({ request }) => {
    if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return
    const text = await readLimited(request, limitBytes)
    if (text.trim() === '') return {}
    try {
      return JSON.parse(text)
    } catch (err) {
      throw new BadRequestError(`The body is not valid JSON (${(err as Error).message}); send a JSON object with Content-Type: application/json.`)
    }
  })
}

async function readLimited(request: Request, limit: number): Promise<string> {
  const declared = request.headers.get('content-length')
  if (declared !== null) {
    if (Number(declared) > limit) throw tooLarge(`${declared} bytes`, limit)
    return request.text()
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
      throw tooLarge(`over ${limit} bytes`, limit)
    }
    chunks.push(value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

const tooLarge = (size: string, limit: number) =>
  new PayloadTooLargeError(`The body is ${size}; this route accepts at most ${limit} bytes. Send a smaller body.`)
