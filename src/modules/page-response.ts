import { brotliCompressSync, brotliDecompressSync, deflateSync, gunzipSync, gzipSync, inflateSync } from 'node:zlib'
import { BUFFER_LIMIT, WHOLE_BODY, type WithWholeBody } from '../edge/exchange'
import { additionsFor, rewritePage, type PageAdditions } from './seo/rewrite'

/** How much of a streamed page is held back looking for its `</head>`. */
const STREAM_HEAD_LIMIT = 64 * 1024
const CODECS: Record<string, { decode(b: Uint8Array): Buffer; encode(b: Buffer): Buffer }> = {
  identity: { decode: (b) => Buffer.from(b), encode: (b) => b },
  gzip: { decode: (b) => gunzipSync(b), encode: (b) => gzipSync(b) },
  'x-gzip': { decode: (b) => gunzipSync(b), encode: (b) => gzipSync(b) },
  deflate: { decode: (b) => inflateSync(b), encode: (b) => deflateSync(b) },
  br: { decode: (b) => brotliDecompressSync(b), encode: (b) => brotliCompressSync(b) },
}

/** True for a container's answer the modules may add to: a 200 HTML page in UTF-8 (or no charset). */
export function isPage(response: Response): boolean {
  if (response.status !== 200) return false
  const type = (response.headers.get('content-type') ?? '').toLowerCase()
  if (!type.startsWith('text/html')) return false
  const charset = /charset\s*=\s*"?([^";\s]+)/.exec(type)?.[1]
  return charset === undefined || charset === 'utf-8' || charset === 'utf8'
}

/**
 * The container's HTML page of site `siteId` with the modules' additions. A page that ends within
 * BUFFER_LIMIT bytes (the edge holds such bodies whole anyway) is decoded (gzip, deflate, br),
 * rewritten and encoded again, with its new length; a longer page in identity encoding is held
 * back only until its `</head>` (at most 64 KiB) and the rest flows through; a longer compressed
 * page, or one with an encoding Berth does not know, goes out untouched. Anything else is
 * returned as it came.
 */
export async function addToPage(response: Response, add: PageAdditions, siteId: string): Promise<Response> {
  const encoding = (response.headers.get('content-encoding') ?? 'identity').trim().toLowerCase()
  const codec = CODECS[encoding]
  if (!codec || response.body === null) return response
  const known = (response as WithWholeBody)[WHOLE_BODY]
  if (known) return whole(Buffer.from(known.buffer, known.byteOffset, known.byteLength), response, codec, add, siteId)
  const reader = response.body.getReader()
  const held: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) return whole(Buffer.concat(held), response, codec, add, siteId)
    held.push(value)
    size += value.byteLength
    if (size > BUFFER_LIMIT) break
  }
  // Longer than the limit: what was read, then the rest as it comes.
  const rest = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of held) controller.enqueue(chunk)
    },
    async pull(controller) {
      const { done, value } = await reader.read()
      if (done) controller.close()
      else controller.enqueue(value)
    },
    cancel: (reason) => reader.cancel(reason),
  })
  if (encoding !== 'identity') return new Response(rest, response)
  return new Response(rest.pipeThrough(headRewriter(add)), { status: response.status, statusText: response.statusText, headers: changedHeaders(response.headers) })
}

/**
 * Pages rewritten lately, by site, what was added and their bytes: a site serves the same page to
 * many visitors, so most requests skip the decoding, the head scan and the encoding. The key
 * names the site and the additions, and finds the entry by a fast hash of the bytes; the entry
 * keeps the bytes it was made from and a hit compares them whole, so neither a collision of the
 * hash (wyhash is not made to resist one a tenant crafts) nor another site's page of the same
 * bytes can ever serve one site's rewritten page on another's origin (issue 23, part 8). Bounded
 * by entries and bytes (sources and results); the oldest go first.
 */
export class RewrittenPages {
  private entries = new Map<string, { source: Uint8Array; out: Uint8Array<ArrayBuffer> | null }>()
  private bytes = 0

  constructor(private o: { maxEntries: number; maxBytes: number; hash?: (bytes: Uint8Array) => number | bigint }) {}

  /** The rewrite remembered for exactly these bytes of this site with these additions: its bytes, null (unchanged), or undefined when none is. */
  get(siteId: string, additions: string, source: Uint8Array): Uint8Array<ArrayBuffer> | null | undefined {
    const entry = this.entries.get(this.key(siteId, additions, source))
    return entry && Buffer.from(entry.source.buffer, entry.source.byteOffset, entry.source.byteLength).equals(source) ? entry.out : undefined
  }

  /** Remembers `out` as the rewrite of `source` (copied: the caller's buffer may be reused), replacing any entry under its key. */
  set(siteId: string, additions: string, source: Uint8Array, out: Uint8Array<ArrayBuffer> | null): void {
    const key = this.key(siteId, additions, source)
    this.drop(key)
    const entry = { source: new Uint8Array(source), out }
    this.entries.set(key, entry)
    this.bytes += size(entry)
    while (this.entries.size > this.o.maxEntries || this.bytes > this.o.maxBytes) this.drop(this.entries.keys().next().value as string)
  }

  private key(siteId: string, additions: string, source: Uint8Array): string {
    const hash = this.o.hash ? this.o.hash(source) : Bun.hash(source)
    return `${siteId}\n${additions}\n${hash}:${source.byteLength}`
  }

  private drop(key: string): void {
    const entry = this.entries.get(key)
    if (!entry) return
    this.bytes -= size(entry)
    this.entries.delete(key)
  }
}

const size = (entry: { source: Uint8Array; out: Uint8Array | null }) => entry.source.byteLength + (entry.out?.byteLength ?? 0)

/** The edge's one cache of rewritten pages: 512 entries, 32 MiB of sources and results. */
const recent = new RewrittenPages({ maxEntries: 512, maxBytes: 32 * 1024 * 1024 })

function whole(body: Buffer, response: Response, codec: (typeof CODECS)[string], add: PageAdditions, siteId: string): Response {
  const additions = `${add.seo?.url ?? ''}\n${add.seo?.fallbackTitle ?? ''}\n${add.widget ?? ''}`
  let out = recent.get(siteId, additions, body)
  if (out === undefined) {
    out = rewritten(body, codec, add)
    recent.set(siteId, additions, body, out)
  }
  if (out === null) return new Response(new Uint8Array(body), response)
  return new Response(out, { status: response.status, statusText: response.statusText, headers: changedHeaders(response.headers) })
}

/** The page's new bytes (encoded as it came), or null when it stays as it is. */
function rewritten(body: Buffer, codec: (typeof CODECS)[string], add: PageAdditions): Uint8Array<ArrayBuffer> | null {
  let text: string
  try {
    text = codec.decode(body).toString('utf8')
  } catch {
    return null
  }
  const page = rewritePage(text, add)
  return page === null ? null : new Uint8Array(codec.encode(Buffer.from(page, 'utf8')))
}

/** The page's headers once its body changed: no length (Bun sets it), no validators of the old bytes. */
function changedHeaders(from: Headers): Headers {
  const headers = new Headers(from)
  headers.delete('content-length')
  headers.delete('content-md5')
  const etag = headers.get('etag')
  // A strong validator no longer matches the bytes sent; a weak one still names the same page.
  if (etag && !etag.startsWith('W/')) headers.set('etag', `W/${etag}`)
  return headers
}

/**
 * Holds a streamed page back until its `</head>` (or STREAM_HEAD_LIMIT bytes), adds there, then
 * passes the rest through as it comes. Works on bytes: everything before `</head>` is whole
 * UTF-8 (`<` starts a character), so only that part is decoded and the rest is never touched.
 */
function headRewriter(add: PageAdditions): TransformStream<Uint8Array, Uint8Array> {
  let held: Buffer | null = Buffer.alloc(0)
  const release = (controller: TransformStreamDefaultController<Uint8Array>, all: Buffer) => {
    held = null
    const end = all.toString('latin1', 0, STREAM_HEAD_LIMIT).search(/<\/head\s*>/i)
    if (end === -1) return controller.enqueue(all)
    const extra = additionsFor(all.toString('utf8', 0, end), all.toString('utf8', end, end + STREAM_HEAD_LIMIT), add)
    if (!extra) return controller.enqueue(all)
    controller.enqueue(all.subarray(0, end))
    controller.enqueue(Buffer.from(extra, 'utf8'))
    controller.enqueue(all.subarray(end))
  }
  return new TransformStream({
    transform(chunk, controller) {
      if (held === null) return controller.enqueue(chunk)
      const all: Buffer = Buffer.concat([held, chunk])
      if (all.length < STREAM_HEAD_LIMIT && !/<\/head\s*>/i.test(all.toString('latin1'))) {
        held = all
        return
      }
      release(controller, all)
    },
    flush(controller) {
      if (held !== null) release(controller, held)
    },
  })
}
