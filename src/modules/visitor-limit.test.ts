import { describe, expect, it } from 'vitest'
import { VisitorLimiter, visitorKey } from './visitor-limit'

describe('VisitorLimiter', () => {
  it('lets a visitor do it perMinute times a minute per site, then says how long to wait', () => {
    let now = 1_000_000
    const limiter = new VisitorLimiter(3, () => now)
    expect([1, 2, 3].map(() => limiter.wait('site-a', '203.0.113.9'))).toEqual([0, 0, 0])
    now += 20_000
    expect(limiter.wait('site-a', '203.0.113.9')).toBe(40)
    // Another site, another visitor: their own counts.
    expect(limiter.wait('site-b', '203.0.113.9')).toBe(0)
    expect(limiter.wait('site-a', '203.0.113.10')).toBe(0)
    now += 40_000
    expect(limiter.wait('site-a', '203.0.113.9')).toBe(0)
  })

  it('counts an IPv6 visitor by its /64, whatever the low bits', () => {
    const limiter = new VisitorLimiter(2, () => 0)
    expect(limiter.wait('s', '2001:db8:1:2::1')).toBe(0)
    expect(limiter.wait('s', '2001:db8:1:2:ffff:1:2:3')).toBe(0)
    expect(limiter.wait('s', '2001:0db8:0001:0002:abcd::9')).toBeGreaterThan(0)
    expect(limiter.wait('s', '2001:db8:1:3::1')).toBe(0)
  })

  it.each([
    ['198.51.100.7', '198.51.100.7'],
    ['::ffff:198.51.100.7', '198.51.100.7'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['[2001:DB8:a:b:c:d:e:f]', '2001:db8:a:b::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
  ])('visitorKey(%s) is %s', (address, key) => {
    expect(visitorKey(address)).toBe(key)
  })
})
