/**
 * Response-rate limiting (RRL) for answers over UDP, so that Berth cannot be used to reflect
 * traffic at a victim whose address an attacker spoofs (the scheme of nsd, Knot and BIND; see
 * Vixie and Schryver, "DNS Response Rate Limiting", and RFC 5358 on reflectors).
 *
 * Each client prefix (the source address cut to `ipv4Prefix` or `ipv6Prefix` bits: /24 and /56 by
 * default, as BIND does) has a token bucket of `responsesPerSecond`, holding at most one second's
 * worth. An answer within the budget is sent. Past it, every `slip`-th limited answer is sent
 * empty with TC set, so a real client behind that prefix retries over TCP, which is not limited
 * (a spoofed source cannot complete a TCP handshake); the others are dropped. `slip` 0 drops
 * them all, 1 truncates them all.
 *
 * Memory is bounded: at most `maxPrefixes` buckets are kept. When full, buckets that have refilled
 * (idle a second or more, so the same as new) are pruned; if that frees too little, the oldest go,
 * those of prefixes being limited last.
 */

export interface RateLimitSettings {
  /** Answers per second per client prefix; 0 turns limiting off. */
  responsesPerSecond: number
  /** Every this-many limited answers, one is sent truncated (TC) instead of dropped; 0: none. */
  slip: number
  /** Bits of an IPv4 source that make one client (1 to 32). */
  ipv4Prefix: number
  /** Bits of an IPv6 source that make one client (1 to 128). */
  ipv6Prefix: number
}

/** What to do with one answer: send it, send it empty with TC set (`slip`), or drop it. */
export type Verdict = 'send' | 'slip' | 'drop'

/** About 100 bytes a bucket: a few MB at most, nsd keeps a fixed table of 1,000,000. */
export const DEFAULT_MAX_PREFIXES = 100_000
/** When the table is full and pruning refilled buckets frees less, the oldest go down to this share. */
const KEEP_SHARE = 0.9

interface Bucket {
  tokens: number
  /** performance.now() of the last update, in milliseconds. */
  at: number
  /** Limited answers so far, for the slip count. */
  limited: number
}

/** Counts since the last `takeStats`, for the log. */
export interface RateLimitStats {
  slipped: number
  dropped: number
  /** Prefixes that had at least one answer limited. */
  prefixes: number
}

export class ResponseRateLimiter {
  private buckets = new Map<number | string, Bucket>()
  private readonly perMs: number
  private readonly ipv4Mask: number
  private stats = { slipped: 0, dropped: 0, prefixes: new Set<number | string>() }

  constructor(
    private readonly settings: RateLimitSettings,
    private readonly now: () => number = () => performance.now(),
    private readonly maxPrefixes = DEFAULT_MAX_PREFIXES,
  ) {
    this.perMs = settings.responsesPerSecond / 1000
    this.ipv4Mask = settings.ipv4Prefix === 0 ? 0 : (0xffffffff << (32 - settings.ipv4Prefix)) >>> 0
  }

  /** Whether to send, truncate or drop the next answer to `address` (as node:dgram gives it). */
  check(address: string): Verdict {
    const rate = this.settings.responsesPerSecond
    const key = this.prefixOf(address)
    const t = this.now()
    let bucket = this.buckets.get(key)
    if (!bucket) {
      if (this.buckets.size >= this.maxPrefixes) this.prune(t)
      bucket = { tokens: rate, at: t, limited: 0 }
      this.buckets.set(key, bucket)
    } else if (t > bucket.at) {
      bucket.tokens = Math.min(rate, bucket.tokens + (t - bucket.at) * this.perMs)
      bucket.at = t
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return 'send'
    }
    bucket.limited++
    if (this.stats.prefixes.size < this.maxPrefixes) this.stats.prefixes.add(key)
    const slip = this.settings.slip
    if (slip > 0 && bucket.limited % slip === 0) {
      this.stats.slipped++
      return 'slip'
    }
    this.stats.dropped++
    return 'drop'
  }

  /** Buckets held now (never more than `maxPrefixes`). */
  get size(): number {
    return this.buckets.size
  }

  /** The counts since the last call, and resets them. */
  takeStats(): RateLimitStats {
    const out = { slipped: this.stats.slipped, dropped: this.stats.dropped, prefixes: this.stats.prefixes.size }
    this.stats = { slipped: 0, dropped: 0, prefixes: new Set() }
    return out
  }

  /**
   * The bucket key of `address`: an IPv4 prefix as a number, an IPv6 prefix as text. An
   * IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, from a dual-stack socket) counts as IPv4.
   */
  prefixOf(address: string): number | string {
    const v4 = parseIpv4(address.startsWith('::ffff:') ? address.slice(7) : address)
    if (v4 !== null) return (v4 & this.ipv4Mask) >>> 0
    return ipv6Prefix(address, this.settings.ipv6Prefix)
  }

  /**
   * Makes room: drops the buckets that have refilled (the same as new ones); if that leaves the
   * table nearly full, the oldest that are not being limited, then the oldest. A prefix being
   * limited goes last, so a flood of spoofed sources cannot wipe the bucket of the address it
   * is reflecting at.
   */
  private prune(t: number): void {
    const full = this.settings.responsesPerSecond
    for (const [key, b] of this.buckets) if (b.tokens + (t - b.at) * this.perMs >= full) this.buckets.delete(key)
    const keep = Math.floor(this.maxPrefixes * KEEP_SHARE)
    for (const spareLimited of [true, false]) {
      let excess = this.buckets.size - keep
      if (excess <= 0) return
      for (const [key, b] of this.buckets) {
        if (excess <= 0) break
        if (spareLimited && b.tokens < 1) continue
        this.buckets.delete(key)
        excess--
      }
    }
  }
}

/** `a.b.c.d` as an unsigned 32-bit number, or null when it is not a dotted-quad IPv4 address. */
export function parseIpv4(address: string): number | null {
  let value = 0
  let part = 0
  let digits = 0
  let dots = 0
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i)
    if (c === 46) {
      if (digits === 0 || ++dots > 3) return null
      value = value * 256 + part
      part = 0
      digits = 0
    } else if (c >= 48 && c <= 57) {
      part = part * 10 + (c - 48)
      if (++digits > 3 || part > 255) return null
    } else return null
  }
  if (dots !== 3 || digits === 0) return null
  return value * 256 + part
}

/**
 * The first `bits` bits of an IPv6 address as hex groups (`2001:db8:0:1` for /64), the rest
 * zeroed; a zone id (`%eth0`) is ignored. Text that does not parse keys on itself.
 */
export function ipv6Prefix(address: string, bits: number): string {
  const groups = parseIpv6(address)
  if (!groups) return address
  const out: number[] = []
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) out.push(bits >= 16 ? groups[i]! : groups[i]! & ((0xffff << (16 - bits)) & 0xffff))
  return out.map((g) => g.toString(16)).join(':')
}

function parseIpv6(address: string): number[] | null {
  const percent = address.indexOf('%')
  const text = percent === -1 ? address : address.slice(0, percent)
  const halves = text.split('::')
  if (halves.length > 2) return null
  const head = halves[0] ? halves[0].split(':') : []
  const tail = halves.length === 2 && halves[1] ? halves[1].split(':') : []
  // A trailing dotted quad (`::ffff:1.2.3.4`, `64:ff9b::1.2.3.4`) is the last two groups.
  const last = tail.length ? tail : head
  const quad = last.length ? parseIpv4(last[last.length - 1]!) : null
  if (quad !== null) last.splice(last.length - 1, 1, (quad >>> 16).toString(16), (quad & 0xffff).toString(16))
  const fill = 8 - head.length - tail.length
  if (halves.length === 1 ? fill !== 0 : fill < 1) return null
  const groups: number[] = []
  for (const g of [...head, ...Array<string>(halves.length === 2 ? fill : 0).fill('0'), ...tail]) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null
    groups.push(parseInt(g, 16))
  }
  return groups
}
