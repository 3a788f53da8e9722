import { copyResponseFields } from './headers'
import { ProtocolError, parseResponseHead, type ResponseHead } from './http1'

/** A response head read, with the fields the client gets already in a Headers. */
export interface ReadHead extends ResponseHead {
  /**
   * The container's end-to-end fields and this hop in Via, without Content-Length when a body
   * follows (Bun frames it); handed to each Response as its init, which copies them.
   */
  headers: Headers
}

/** Distinct heads kept; past it the memory starts afresh. */
const MAX_KNOWN = 512
/** Longer heads (big cookies, long CSPs) are read every time rather than kept. */
const MAX_KNOWN_LENGTH = 2048

/**
 * Reads response heads, remembering those seen: a container answers the same page with the same
 * head again and again (only Date moves, once a second), so parsing it and building the client's
 * fields happen once per distinct head rather than per response (3.5 against 1.0 µs for nginx's
 * usual head, measured in a loop; docs/benchmarks.md, "HTTPS through the edge"). The head's
 * exact text is the key, so a remembered answer is the one parsing would give.
 */
export class ResponseHeads {
  private known = new Map<string, ReadHead>()

  /** The head of `text` (latin1, up to the blank line) answering a request with `method`; throws ProtocolError. */
  read(text: string, method: string): ReadHead {
    // HEAD answers frame differently from every other method's for the same text.
    const keep = method !== 'HEAD' && text.length <= MAX_KNOWN_LENGTH
    const seen = keep ? this.known.get(text) : undefined
    if (seen !== undefined) return seen
    const parsed = parseResponseHead(text, method)
    const head: ReadHead = { ...parsed, headers: parsed.status < 200 ? new Headers() : clientHeaders(parsed) }
    // A head that sets a cookie is usually one of a kind (a session per visitor): kept, it would
    // only push out the heads that do come back.
    if (keep && !setsCookie(parsed.fields)) {
      if (this.known.size >= MAX_KNOWN) this.known.clear()
      this.known.set(text, head)
    }
    return head
  }
}

function setsCookie(fields: string[]): boolean {
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i]!.length === 10 && fields[i]!.toLowerCase() === 'set-cookie') return true
  }
  return false
}

function clientHeaders(head: ResponseHead): Headers {
  const headers = new Headers()
  try {
    copyResponseFields(headers, head.fields, head.framing !== 'none')
  } catch (err) {
    throw new ProtocolError(`unusable response field: ${(err as Error).message}`)
  }
  return headers
}
