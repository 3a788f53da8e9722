/**
 * Header rules of the edge, in both directions. The edge is the trust boundary: whatever a
 * client says about forwarding (X-Forwarded-*, X-Real-IP, Forwarded) is replaced by what the
 * edge itself saw, so a site can believe these headers.
 */

/** Hop-by-hop fields (RFC 9110 section 7.6.1, plus the non-standard Proxy-Connection). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'])

/**
 * Request fields the edge writes itself: framing (the edge re-frames the body it forwards),
 * forwarding information, and Expect (Bun's listener already answered any 100-continue).
 */
const SET_BY_EDGE = new Set(['host', 'content-length', 'expect', 'forwarded', 'via', 'x-forwarded-for', 'x-forwarded-host', 'x-forwarded-proto', 'x-real-ip'])

/** This hop in Via (RFC 9110 section 7.6.3): protocol version and a pseudonym. */
export const VIA = '1.1 berth'

/** Field names a Connection header nominates as hop-by-hop; usually none. */
export function connectionTokens(value: string | null): Set<string> | null {
  if (value === null) return null
  const tokens = new Set<string>()
  for (const token of value.split(',')) {
    const t = token.trim().toLowerCase()
    if (t) tokens.add(t)
  }
  return tokens
}

export interface ForwardInfo {
  method: string
  /** Path and query exactly as the client sent them (origin-form). */
  target: string
  host: string
  clientAddress: string
  proto: 'http' | 'https'
  /** `content-length: n`, `transfer-encoding: chunked`, or none for a request without a body. */
  framing: 'none' | 'chunked' | number
}

/**
 * The request head the container receives: the client's end-to-end fields (as Headers lists
 * them: sorted, same-name fields joined, which RFC 9110 section 5.3 allows), the original Host,
 * and the edge's forwarding and framing fields.
 */
export function requestHead(headers: Headers, info: ForwardInfo): string {
  const nominated = connectionTokens(headers.get('connection'))
  let head = `${info.method} ${info.target} HTTP/1.1\r\nhost: ${info.host}\r\n`
  let via: string | null = null
  for (const [name, value] of headers as unknown as Iterable<[string, string]>) {
    if (HOP_BY_HOP.has(name) || SET_BY_EDGE.has(name) || nominated?.has(name)) {
      if (name === 'via') via = value
      continue
    }
    head += `${name}: ${value}\r\n`
  }
  head += `x-forwarded-for: ${info.clientAddress}\r\nx-real-ip: ${info.clientAddress}\r\nx-forwarded-proto: ${info.proto}\r\nx-forwarded-host: ${info.host}\r\nvia: ${via ? `${via}, ${VIA}` : VIA}\r\n`
  if (info.framing === 'chunked') head += 'transfer-encoding: chunked\r\n'
  else if (info.framing !== 'none') head += `content-length: ${info.framing}\r\n`
  return head + '\r\n'
}

/**
 * Adds the container's end-to-end response fields (see ResponseHead.fields) to `target`, the
 * headers of the Response the client gets, and this hop to Via (RFC 9110 section 7.6.3; Headers
 * joins it to the container's Via). Throws TypeError on a field Headers refuses.
 */
export function copyResponseFields(target: Headers, fields: string[], withBody = false): void {
  // With a body, Bun frames the answer itself (the exact length of a whole body, chunks for a
  // stream), so the container's Content-Length, the last field when present, is left to it: set
  // by hand it costs a TLS connection 15-25% of its requests per second (bench:https).
  const end = withBody && fields.length >= 2 && fields[fields.length - 2] === 'content-length' ? fields.length - 2 : fields.length
  for (let i = 0; i < end; i += 2) target.append(fields[i]!, fields[i + 1]!)
  target.append('via', VIA)
}
