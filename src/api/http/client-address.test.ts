import { describe, expect, it } from 'vitest'
import { ClientAddress } from './client-address'

const request = (xff?: string) => new Request('http://localhost/', { headers: xff ? { 'x-forwarded-for': xff } : {} })

function from(clients: ClientAddress, peer: string, xff?: string) {
  const req = request(xff)
  clients.peers.set(req, peer)
  return clients.of(req)
}

describe('ClientAddress', () => {
  it('uses the socket peer and ignores X-Forwarded-For when no proxy is trusted', () => {
    const c = new ClientAddress([])
    expect(from(c, '203.0.113.5', '198.51.100.1')).toBe('203.0.113.5')
  })

  it('believes X-Forwarded-For only from a trusted proxy, taking the first untrusted hop from the right', () => {
    const c = new ClientAddress(['10.0.0.0/8', '192.0.2.1'])
    expect(from(c, '10.1.2.3', '198.51.100.1')).toBe('198.51.100.1')
    // A client cannot smuggle an address in front of the real one.
    expect(from(c, '10.1.2.3', '1.1.1.1, 198.51.100.1')).toBe('198.51.100.1')
    // Chained trusted proxies are skipped.
    expect(from(c, '10.1.2.3', '198.51.100.1, 192.0.2.1, 10.9.9.9')).toBe('198.51.100.1')
    expect(from(c, '203.0.113.5', '198.51.100.1')).toBe('203.0.113.5')
  })

  it('falls back to the peer on garbage and normalises IPv4-mapped IPv6', () => {
    const c = new ClientAddress(['127.0.0.1'])
    expect(from(c, '::ffff:127.0.0.1', 'not-an-ip')).toBe('127.0.0.1')
    expect(from(c, '::ffff:127.0.0.1')).toBe('127.0.0.1')
    expect(from(c, '127.0.0.1', '2001:db8::1')).toBe('2001:db8::1')
  })
})
