/** Visitors remembered at most; past it the memory starts afresh (a flood of addresses cannot grow it). */
const MAX_KEYS = 50_000

/**
 * How often one visitor may do something costly on one site (ask the chatbot, have a page
 * translated): at most `perMinute` in any 60 seconds, in memory. A visitor is their address; an
 * IPv6 address counts by its /64, which one client is usually given whole (RFC 6177), so a
 * visitor cannot become millions by changing the low bits.
 *
 * @example
 * const wait = limiter.wait(site.siteId, visitor)
 * if (wait > 0) return tooMany(wait) // 429 with Retry-After: wait
 */
export class VisitorLimiter {
  private seen = new Map<string, number[]>()

  constructor(private perMinute: number, private now: () => number = Date.now) {}

  /** 0 when the visitor may go on (and it is counted), else the seconds to wait (not counted). */
  wait(siteId: string, visitor: string): number {
    const key = `${siteId} ${visitorKey(visitor)}`
    const now = this.now()
    const recent = (this.seen.get(key) ?? []).filter((t) => now - t < 60_000)
    if (recent.length >= this.perMinute) {
      this.seen.set(key, recent)
      return Math.max(1, Math.ceil((recent[0]! + 60_000 - now) / 1000))
    }
    recent.push(now)
    this.seen.set(key, recent)
    if (this.seen.size > MAX_KEYS) this.seen.clear()
    return 0
  }
}

/** An IPv4 address as it is; an IPv6 address as its first four groups (its /64), expanded. */
export function visitorKey(address: string): string {
  if (!address.includes(':')) return address
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0]!.toLowerCase()
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(bare)
  if (mapped) return mapped[1]!
  const [head = '', tail] = bare.split('::')
  const left = head ? head.split(':') : []
  const right = tail === undefined ? [] : tail ? tail.split(':') : []
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
  return groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':') + '::/64'
}
