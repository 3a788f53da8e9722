import { describe, expect, it } from 'vitest'
import { ipv6Prefix, parseIpv4, type RateLimitSettings, ResponseRateLimiter, type Verdict } from './rate-limit'

const SETTINGS: RateLimitSettings = { responsesPerSecond: 10, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56 }

/** A limiter on a clock the test moves by hand (milliseconds). */
function limiterAt(settings: Partial<RateLimitSettings> = {}, maxPrefixes?: number) {
  const clock = { ms: 1000 }
  const limiter = new ResponseRateLimiter({ ...SETTINGS, ...settings }, () => clock.ms, maxPrefixes)
  return { clock, limiter }
}

const tally = (verdicts: Verdict[]) => ({ send: verdicts.filter((v) => v === 'send').length, slip: verdicts.filter((v) => v === 'slip').length, drop: verdicts.filter((v) => v === 'drop').length })
const burst = (limiter: ResponseRateLimiter, address: string, n: number) => Array.from({ length: n }, () => limiter.check(address))

describe('response-rate limiting', () => {
  it('sends one second of answers at once, then truncates every second limited answer and drops the rest', () => {
    const { limiter } = limiterAt()
    const verdicts = burst(limiter, '192.0.2.1', 30)
    expect(verdicts.slice(0, 10).every((v) => v === 'send')).toBe(true)
    expect(verdicts.slice(10, 14)).toEqual(['drop', 'slip', 'drop', 'slip'])
    expect(tally(verdicts)).toEqual({ send: 10, slip: 10, drop: 10 })
  })

  it('refills at the configured rate, never past one second of answers', () => {
    const { clock, limiter } = limiterAt()
    burst(limiter, '192.0.2.1', 10)
    clock.ms += 300 // 3 answers' worth
    expect(tally(burst(limiter, '192.0.2.1', 5)).send).toBe(3)
    clock.ms += 60_000
    expect(tally(burst(limiter, '192.0.2.1', 15)).send).toBe(10)
  })

  it('counts a whole IPv4 /24 and IPv6 /56 as one client, and other prefixes apart', () => {
    const { limiter } = limiterAt()
    burst(limiter, '192.0.2.1', 10)
    expect(limiter.check('192.0.2.200')).not.toBe('send')
    expect(limiter.check('::ffff:192.0.2.9')).not.toBe('send')
    expect(limiter.check('192.0.3.1')).toBe('send')
    burst(limiter, '2001:db8:0:100::1', 10)
    expect(limiter.check('2001:db8:0:1ff:ffff::2')).not.toBe('send')
    expect(limiter.check('2001:db8:0:200::1')).toBe('send')
  })

  it('takes its prefix lengths from the settings', () => {
    const { limiter } = limiterAt({ ipv4Prefix: 32, ipv6Prefix: 128 })
    burst(limiter, '192.0.2.1', 10)
    expect(limiter.check('192.0.2.1')).not.toBe('send')
    expect(limiter.check('192.0.2.2')).toBe('send')
    burst(limiter, '2001:db8::1', 10)
    expect(limiter.check('2001:db8::2')).toBe('send')
  })

  it('truncates every limited answer with slip 1, and drops them all with slip 0', () => {
    expect(tally(burst(limiterAt({ slip: 1 }).limiter, '192.0.2.1', 20))).toEqual({ send: 10, slip: 10, drop: 0 })
    expect(tally(burst(limiterAt({ slip: 0 }).limiter, '192.0.2.1', 20))).toEqual({ send: 10, slip: 0, drop: 10 })
  })

  it('keeps at most its cap of prefixes, dropping refilled ones first and a limited one last', () => {
    const { clock, limiter } = limiterAt({}, 100)
    burst(limiter, '198.51.100.1', 20) // the victim: limited
    for (let i = 0; i < 99; i++) limiter.check(`10.0.${i}.1`)
    expect(limiter.size).toBe(100)
    clock.ms += 2000 // every bucket refills, so all may go
    for (let i = 0; i < 500; i++) limiter.check(`10.1.${i % 250}.${i < 250 ? 1 : 2}`)
    expect(limiter.size).toBeLessThanOrEqual(100)
    expect(limiter.size).toBeGreaterThan(80)
    // Under a spoofed flood of fresh prefixes with no time passing, a limited bucket is not the
    // first to go: the pruning takes refilled buckets, then the oldest.
    const { limiter: busy } = limiterAt({}, 100)
    burst(busy, '198.51.100.1', 20)
    for (let i = 0; i < 1000; i++) busy.check(`10.${i >> 8}.${i & 255}.1`)
    expect(busy.size).toBeLessThanOrEqual(100)
    expect(busy.check('198.51.100.1')).not.toBe('send')
  })

  it('tells how many answers it held back, and to how many prefixes', () => {
    const { limiter } = limiterAt()
    burst(limiter, '192.0.2.1', 14)
    burst(limiter, '2001:db8::1', 11)
    expect(limiter.takeStats()).toEqual({ slipped: 2, dropped: 3, prefixes: 2 })
    expect(limiter.takeStats()).toEqual({ slipped: 0, dropped: 0, prefixes: 0 })
  })
})

describe('client prefixes', () => {
  it('reads dotted-quad IPv4 and nothing else', () => {
    expect(parseIpv4('192.0.2.1')).toBe(0xc0000201)
    expect(parseIpv4('255.255.255.255')).toBe(0xffffffff)
    for (const bad of ['256.0.0.1', '1.2.3', '1.2.3.4.5', '1..2.3', '::1', '', '1.2.3.4 ', '1234.1.1.1']) expect(parseIpv4(bad)).toBeNull()
  })

  it('cuts IPv6 addresses to their prefix, whatever their spelling', () => {
    expect(ipv6Prefix('2001:db8:aa:bbcc:1::1', 56)).toBe('2001:db8:aa:bb00')
    expect(ipv6Prefix('2001:0db8:00aa:bbff:0:0:0:1', 56)).toBe('2001:db8:aa:bb00')
    expect(ipv6Prefix('::1', 64)).toBe('0:0:0:0')
    expect(ipv6Prefix('fe80::1%eth0', 64)).toBe('fe80:0:0:0')
    expect(ipv6Prefix('64:ff9b::192.0.2.1', 128)).toBe('64:ff9b:0:0:0:0:c000:201')
    expect(ipv6Prefix('2001:db8::', 3)).toBe('2000')
    expect(ipv6Prefix('not an address', 56)).toBe('not an address')
  })
})
