/**
 * The parts of HTTP/1.1 (RFC 9112) the edge needs to read a container's responses: the
 * response head and the chunked transfer coding. Anything malformed is a ProtocolError, which
 * the edge answers with 502 (RFC 9112 sections 5.1 and 5.2 ask a proxy to reject, not guess).
 */

/** The container broke HTTP/1.1; the message and the connection are discarded. */
export class ProtocolError extends Error {}

/** How the body of a response is delimited (RFC 9112 section 6.3). */
export type BodyFraming = 'none' | 'chunked' | 'close' | { length: number }

export interface ResponseHead {
  status: number
  /**
   * The end-to-end fields as a flat list, name then value, both as received (Headers lowercases
   * names, trims values and rejects invalid ones when the client's response is built). Hop-by-hop
   * fields (RFC 9110 section 7.6.1) and those the Connection field nominates are already left
   * out; Content-Length is kept, normalised, only when it framed the body.
   */
  fields: string[]
  framing: BodyFraming
  /** Whether the connection may carry another request after this response. */
  keepAlive: boolean
}

/** Longest response head the edge accepts (nginx's default proxy_buffer_size is 4-8 KiB). */
export const MAX_HEAD_BYTES = 64 * 1024

/**
 * Parses a response head (the text before the blank line, read as latin1) sent in answer to a
 * request with `method`. Interim (1xx) heads parse with framing 'none'; the caller skips them.
 * Runs once per proxied request, so it walks the text with indexOf rather than split and regular
 * expressions (1.8 against 0.6 µs for nginx's usual head), and lowercases a name only when its
 * length is that of a field the edge acts on.
 */
export function parseResponseHead(text: string, method: string): ResponseHead {
  let eol = text.indexOf('\r\n')
  if (eol === -1) eol = text.length
  const status = statusOf(text, eol)
  const http10 = text.charCodeAt(7) === 48
  if (status > 599 || (status < 200 && status !== 100 && status !== 102 && status !== 103)) {
    // 101 included: the edge never asks a container to switch protocols.
    throw new ProtocolError(`unexpected status ${status}`)
  }
  let fields: string[] = []
  let connection: string | null = null
  let transferEncoding: string | null = null
  let contentLength = -1
  for (let pos = eol + 2; pos <= text.length; pos = eol + 2) {
    eol = text.indexOf('\r\n', pos)
    if (eol === -1) eol = text.length
    const first = text.charCodeAt(pos)
    if (first === 32 || first === 9) throw new ProtocolError('obsolete line folding in a response field')
    const colon = text.indexOf(':', pos)
    if (colon <= pos || colon > eol) throw new ProtocolError('response field without a name')
    const last = text.charCodeAt(colon - 1)
    if (last === 32 || last === 9) throw new ProtocolError('whitespace before the colon of a response field')
    const name = text.slice(pos, colon)
    if (ACTED_ON_LENGTHS[name.length] === 1) {
      switch (name.toLowerCase()) {
        case 'content-length':
          contentLength = parseContentLength(text.slice(colon + 1, eol), contentLength)
          continue
        case 'transfer-encoding':
          transferEncoding = joinList(transferEncoding, text.slice(colon + 1, eol))
          continue
        case 'connection':
          connection = joinList(connection, text.slice(colon + 1, eol))
          continue
        case 'keep-alive':
        case 'proxy-connection':
        case 'te':
        case 'trailer':
        case 'upgrade':
          continue
      }
    }
    fields.push(name, text.slice(colon + 1, eol))
  }
  let keepAlive = !http10
  if (connection !== null) {
    // The usual values first, without splitting the list.
    if (KEEP_ALIVE.test(connection)) keepAlive = true
    else if (CLOSE.test(connection)) keepAlive = false
    else {
      const tokens = listTokens(connection)
      keepAlive = tokens.includes('close') ? false : http10 ? tokens.includes('keep-alive') : true
      const nominated = tokens.filter((t) => t !== 'close' && t !== 'keep-alive')
      if (nominated.length > 0) fields = withoutFields(fields, nominated)
    }
  }
  let framing: BodyFraming
  if (status < 200 || status === 204 || status === 304 || method === 'HEAD') framing = 'none'
  else if (transferEncoding !== null) {
    // A message with both Transfer-Encoding and Content-Length may be smuggling: use the
    // coding and close the connection afterwards (RFC 9112 section 6.3, rule 3).
    if (contentLength !== -1) keepAlive = false
    const codings = listTokens(transferEncoding)
    framing = codings[codings.length - 1] === 'chunked' ? 'chunked' : 'close'
  } else if (contentLength !== -1) framing = { length: contentLength }
  else framing = 'close'
  if (framing === 'close') keepAlive = false
  // Content-Length stays for HEAD and 304 answers (the length of the body not sent) and for
  // length-framed bodies; it never travels beside Transfer-Encoding.
  if (contentLength !== -1 && transferEncoding === null) fields.push('content-length', String(contentLength))
  return { status, fields, framing, keepAlive }
}

/**
 * The status of a status line `HTTP/1.x NNN[ reason]` (RFC 9112 section 4) ending at `end`;
 * ProtocolError for anything else. The reason may hold any byte but CR and LF.
 */
function statusOf(text: string, end: number): number {
  const v = text.charCodeAt(7)
  const a = text.charCodeAt(9) - 48
  const b = text.charCodeAt(10) - 48
  const c = text.charCodeAt(11) - 48
  const valid = text.startsWith('HTTP/1.') && (v === 48 || v === 49) && text.charCodeAt(8) === 32 &&
    a >= 1 && a <= 9 && b >= 0 && b <= 9 && c >= 0 && c <= 9 &&
    (end === 12 || (end > 12 && text.charCodeAt(12) === 32 && !hasLineBreak(text, 13, end)))
  if (!valid) throw new ProtocolError(`bad status line '${text.slice(0, Math.min(end, 80))}'`)
  return a * 100 + b * 10 + c
}

function hasLineBreak(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) {
    const ch = text.charCodeAt(i)
    if (ch === 10 || ch === 13) return true
  }
  return false
}

/** Lengths of the field names the parser acts on: te, trailer, upgrade, connection, ... */
const ACTED_ON_LENGTHS = (() => {
  const lengths = new Uint8Array(32)
  for (const name of ['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade']) lengths[name.length] = 1
  return lengths
})()

function joinList(previous: string | null, value: string): string {
  return previous === null ? value : `${previous}, ${value}`
}

const KEEP_ALIVE = /^[ \t]*keep-alive[ \t]*$/i
const CLOSE = /^[ \t]*close[ \t]*$/i

function listTokens(list: string): string[] {
  return list.split(',').map((t) => t.trim().toLowerCase()).filter(Boolean)
}

function withoutFields(fields: string[], names: string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < fields.length; i += 2) {
    if (!names.includes(fields[i]!.toLowerCase())) out.push(fields[i]!, fields[i + 1]!)
  }
  return out
}

function parseContentLength(value: string, previous: number): number {
  // The usual value: optional spaces and 1 to 15 digits.
  let n = 0
  let digits = 0
  let i = 0
  while (value.charCodeAt(i) === 32 || value.charCodeAt(i) === 9) i++
  for (; i < value.length; i++, digits++) {
    const d = value.charCodeAt(i) - 48
    if (d < 0 || d > 9) break
    n = n * 10 + d
  }
  while (value.charCodeAt(i) === 32 || value.charCodeAt(i) === 9) i++
  if (i === value.length && digits >= 1 && digits <= 15) {
    if (previous !== -1 && n !== previous) throw new ProtocolError('conflicting Content-Length values')
    return n
  }
  // Several equal values (in one line or several) are allowed (RFC 9110 section 8.6).
  let length = previous
  for (const part of value.split(',')) {
    const v = part.trim()
    if (!/^\d{1,15}$/.test(v)) throw new ProtocolError(`bad Content-Length '${value.slice(0, 40)}'`)
    const n = Number(v)
    if (length !== -1 && n !== length) throw new ProtocolError('conflicting Content-Length values')
    length = n
  }
  return length
}

/** States of the chunked decoder. */
const Chunk = { Size: 0, Data: 1, DataCr: 2, DataLf: 3, Trailer: 4, Done: 5 } as const

/** Longest chunk-size or trailer line accepted. */
const MAX_LINE = 8 * 1024

/**
 * Decodes the chunked transfer coding (RFC 9112 section 7.1) as bytes arrive. Chunk extensions
 * and trailer fields are read and dropped; data is handed out as views of the input, uncopied.
 */
export class ChunkedDecoder {
  private state: number = Chunk.Size
  private line = ''
  private remaining = 0

  get done(): boolean {
    return this.state === Chunk.Done
  }

  /**
   * Feeds `input` and calls `emit` for each piece of data. Returns where the message ended in
   * `input` (bytes after it belong to the next message), or -1 when more input is needed.
   */
  push(input: Buffer, emit: (data: Buffer) => void): number {
    let i = 0
    while (i < input.length) {
      switch (this.state) {
        case Chunk.Size:
        case Chunk.Trailer: {
          const lf = input.indexOf(10, i)
          this.line += input.toString('latin1', i, lf === -1 ? input.length : lf)
          if (this.line.length > MAX_LINE) throw new ProtocolError('chunk line too long')
          if (lf === -1) return -1
          i = lf + 1
          const line = this.line.endsWith('\r') ? this.line.slice(0, -1) : this.line
          this.line = ''
          if (this.state === Chunk.Trailer) {
            if (line === '') {
              this.state = Chunk.Done
              return i
            }
            continue
          }
          const semi = line.indexOf(';')
          const hex = (semi === -1 ? line : line.slice(0, semi)).trim()
          if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw new ProtocolError(`bad chunk size '${hex.slice(0, 20)}'`)
          this.remaining = parseInt(hex, 16)
          this.state = this.remaining === 0 ? Chunk.Trailer : Chunk.Data
          break
        }
        case Chunk.Data: {
          const n = Math.min(this.remaining, input.length - i)
          emit(input.subarray(i, i + n))
          i += n
          this.remaining -= n
          if (this.remaining === 0) this.state = Chunk.DataCr
          break
        }
        case Chunk.DataCr: {
          const b = input[i++]
          if (b === 13) this.state = Chunk.DataLf
          else if (b === 10) this.state = Chunk.Size
          else throw new ProtocolError('chunk data not followed by CRLF')
          break
        }
        case Chunk.DataLf: {
          if (input[i++] !== 10) throw new ProtocolError('chunk data not followed by CRLF')
          this.state = Chunk.Size
          break
        }
        case Chunk.Done:
          return i
      }
    }
    return this.state === Chunk.Done ? i : -1
  }
}
