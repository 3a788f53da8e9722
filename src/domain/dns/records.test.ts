import { describe, expect, it } from 'vitest'
import { DomainError } from '../errors'
import { checkRecord, checkSubdomain, splitTxt, toDnsRecord } from './records'

const OWNER = 'acme.sites.example.com'
const fails = (fn: () => unknown) => {
  try {
    fn()
  } catch (err) {
    if (err instanceof DomainError) return { kind: err.kind, field: err.field, message: err.message }
    throw err
  }
  throw new Error('did not fail')
}

describe('DNS record values', () => {
  it.each([
    ['A', '203.0.113.10', '203.0.113.10'],
    ['A', ' 192.0.2.1 ', '192.0.2.1'],
    ['AAAA', '2001:DB8:0:0:0:0:0:10', '2001:db8::10'],
    ['AAAA', '::ffff:192.0.2.1', '::ffff:c000:201'],
    ['CNAME', 'Shop.Example.COM.', 'shop.example.com'],
    ['MX', '10\tmail.example.com', '10 mail.example.com'],
    ['MX', '0 mx.example.com.', '0 mx.example.com'],
    ['TXT', 'v=spf1 include:_spf.example.com -all', 'v=spf1 include:_spf.example.com -all'],
    ['TXT', 'héllo wörld ✓', 'héllo wörld ✓'],
  ] as const)('%s %j is stored as %j', (type, value, canonical) => {
    expect(checkRecord({ type, value }, OWNER).value).toBe(canonical)
  })

  it('checks SRV records at a _service._proto name, with a "." target allowed', () => {
    expect(checkRecord({ type: 'SRV', subdomain: '_sip._tcp', value: '10 5 5060 sip.example.com.' }, OWNER).value).toBe('10 5 5060 sip.example.com')
    expect(checkRecord({ type: 'SRV', subdomain: '_imap._tcp', value: '0 0 0 .' }, OWNER).value).toBe('0 0 0 .')
    expect(fails(() => checkRecord({ type: 'SRV', subdomain: 'sip', value: '1 1 1 a.example.com' }, OWNER)).field).toBe('subdomain')
  })

  it.each([
    ['A', '256.0.0.1'], ['A', '1.2.3'], ['A', '01.2.3.4'], ['A', '0x7f.0.0.1'], ['A', 'example.com'],
    ['AAAA', '203.0.113.1'], ['AAAA', '2001:db8::g'], ['AAAA', 'fe80::1%lo'],
    ['CNAME', 'single'], ['CNAME', 'a b.example.com'], ['CNAME', '-bad.example.com'], ['CNAME', `${'a'.repeat(64)}.example.com`],
    ['MX', 'mail.example.com'], ['MX', '-1 mail.example.com'], ['MX', '65536 mail.example.com'], ['MX', '10 mail'],
    ['TXT', 'tab\there'], ['TXT', 'x'.repeat(4001)], ['TXT', 'esc\u001b[31m'],
  ] as const)('%s %j is refused on value', (type, value) => {
    const err = fails(() => checkRecord({ type, value }, OWNER))
    expect(err).toMatchObject({ kind: 'invalid', field: 'value' })
    expect(err.message).toMatch(/\.$/)
  })

  it('bounds the TTL and defaults it to 3600', () => {
    expect(checkRecord({ type: 'A', value: '192.0.2.1' }, OWNER).ttl).toBe(3600)
    expect(checkRecord({ type: 'A', value: '192.0.2.1', ttl: 60 }, OWNER).ttl).toBe(60)
    for (const ttl of [59, 86_401, 1.5, -1]) expect(fails(() => checkRecord({ type: 'A', value: '192.0.2.1', ttl }, OWNER)).field).toBe('ttl')
  })
})

describe('subdomains', () => {
  it('normalizes case and the owner itself', () => {
    expect(checkSubdomain('WWW', OWNER)).toBe('www')
    expect(checkSubdomain('@', OWNER)).toBe('')
    expect(checkSubdomain('', OWNER)).toBe('')
    expect(checkSubdomain('_dmarc', OWNER)).toBe('_dmarc')
    expect(checkSubdomain('a.b.c.', OWNER)).toBe('a.b.c')
  })

  it.each(['*', '*.www', 'a..b', '-a', 'a-', 'a_b', `${'a'.repeat(64)}`, 'www.acme.sites.example.com', 'a/b', 'a b'])('refuses %j', (sub) => {
    expect(fails(() => checkSubdomain(sub, OWNER)).field).toBe('subdomain')
  })

  it('refuses a name over 253 characters', () => {
    const sub = Array.from({ length: 4 }, () => 'a'.repeat(60)).join('.')
    expect(fails(() => checkSubdomain(sub, OWNER)).message).toMatch(/longer than 253/)
  })
})

describe('wire form', () => {
  it('splits TXT text into strings of at most 255 bytes without cutting a character', () => {
    const text = `${'a'.repeat(254)}é${'b'.repeat(300)}`
    const parts = splitTxt(text)
    expect(parts.join('')).toBe(text)
    for (const p of parts) expect(Buffer.byteLength(p)).toBeLessThanOrEqual(255)
    expect(parts[0]).toBe('a'.repeat(254))
  })

  it('gives each type the shape the DNS server encodes', () => {
    expect(toDnsRecord('MX', '10 mail.example.com', OWNER, 300)).toEqual({ name: OWNER, ttl: 300, type: 'MX', data: { preference: 10, exchange: 'mail.example.com' } })
    expect(toDnsRecord('SRV', '1 2 3 t.example.com', `_x._tcp.${OWNER}`, 60).data).toEqual({ priority: 1, weight: 2, port: 3, target: 't.example.com' })
  })
})
