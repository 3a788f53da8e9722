import ipaddr from 'ipaddr.js'

/**
 * Finds the address a request came from. The socket's peer is the truth unless that peer is a
 * configured trusted proxy; then X-Forwarded-For is read right to left, skipping trusted hops,
 * and the first untrusted address is the client (RFC 7239 section 5.2's reasoning, applied to the
 * de-facto header). An address anyone could forge is never believed.
 */
export class ClientAddress {
  private ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][]
  /** Peer addresses set by hand, for requests that did not come through the listener (tests). */
  readonly peers = new WeakMap<Request, string>()
  /** Requests made in-process on behalf of another (an MCP tool call's): they come from its client. */
  readonly outer = new WeakMap<Request, Request>()
  private listener: { requestIP(request: Request): { address: string } | null } | undefined

  constructor(trustedProxies: string[], private fallbackPeer = '127.0.0.1') {
    this.ranges = trustedProxies.map((entry) => {
      if (entry.includes('/')) return ipaddr.parseCIDR(entry)
      const addr = ipaddr.parse(entry)
      return [addr, addr.kind() === 'ipv4' ? 32 : 128]
    })
  }

  /**
   * Lets `of` ask the listener for a request's peer, only when a route needs it (rate-limited
   * ones): asking on every request cost the hot routes measurably (bench/, issue 2).
   */
  attach(listener: { requestIP(request: Request): { address: string } | null }): void {
    this.listener = listener
  }

  /** The client's address, normalised (IPv4-mapped IPv6 becomes IPv4). */
  of(request: Request): string {
    const outer = this.outer.get(request)
    if (outer) return this.of(outer)
    return this.ofPeer(request, this.peers.get(request) ?? this.listener?.requestIP(request)?.address)
  }

  /** As `of`, with the socket peer given directly (the edge proxy's hot path). */
  ofPeer(request: Request, socketPeer: string | undefined): string {
    // Requests handled in-process (tests, internal calls) have no socket; they count as loopback.
    const peer = normalise(socketPeer ?? this.fallbackPeer)
    if (this.ranges.length === 0 || !this.trusted(peer)) return peer
    const forwarded = request.headers.get('x-forwarded-for')
    if (!forwarded) return peer
    const hops = forwarded.split(',').map((s) => s.trim()).filter(Boolean)
    for (let i = hops.length - 1; i >= 0; i--) {
      if (!ipaddr.isValid(hops[i])) return peer
      const hop = normalise(hops[i])
      if (!this.trusted(hop)) return hop
    }
    return peer
  }

  private trusted(address: string): boolean {
    if (!ipaddr.isValid(address)) return false
    const addr = ipaddr.parse(address)
    return this.ranges.some(([range, bits]) => range.kind() === addr.kind() && addr.match(range, bits))
  }
}

/** Addresses seen lately, normalised: parsing one with ipaddr.js was ~3% of an edge request's CPU. */
const normalised = new Map<string, string>()

function normalise(address: string): string {
  let known = normalised.get(address)
  if (known === undefined) {
    known = parseAddress(address)
    if (normalised.size >= 10_000) normalised.clear()
    normalised.set(address, known)
  }
  return known
}

function parseAddress(address: string): string {
  if (!ipaddr.isValid(address)) return address
  const addr = ipaddr.parse(address)
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) return (addr as ipaddr.IPv6).toIPv4Address().toString()
  return addr.toString()
}
