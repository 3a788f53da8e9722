import { describe, expect, it } from 'vitest'
import { redact, SECRET_MASK } from './redact'

describe('redact', () => {
  it('masks a secret of 6 characters or more wherever it appears, the longest first', () => {
    const out = redact('token=sk_live_abcdef123 and again sk_live_abcdef123; prefix sk_live_abc', ['sk_live_abcdef123', 'sk_live_abc'])
    expect(out).toBe(`token=${SECRET_MASK} and again ${SECRET_MASK}; prefix ${SECRET_MASK}`)
    expect(redact('a.b*c(d)+e hello', ['a.b*c(d)+e'])).toBe(`${SECRET_MASK} hello`)
  })

  it('masks a shorter secret only as an assignment value, never inside other words or numbers', () => {
    const text = 'PIN=1234\n"pin": "1234"\npin: 1234\nbuild 12345678 took 1234 ms'
    expect(redact(text, ['1234'])).toBe(`PIN=${SECRET_MASK}\n"pin": "${SECRET_MASK}"\npin: ${SECRET_MASK}\nbuild 12345678 took 1234 ms`)
    expect(redact('X=12345', ['1234'])).toBe('X=12345')
  })

  it('masks a value of several lines whole and line by line; leaves text be with no secrets or empty ones', () => {
    const pem = '-----BEGIN KEY-----\nMIIBVgIBADANBgkqhkiG9w0BAQEFAASCAUAwggE8AgEAAkEA\n-----END KEY-----'
    expect(redact(`key:\n${pem}\n`, [pem])).toBe(`key:\n${SECRET_MASK}\n`)
    expect(redact('line MIIBVgIBADANBgkqhkiG9w0BAQEFAASCAUAwggE8AgEAAkEA seen', [pem])).toBe(`line ${SECRET_MASK} seen`)
    expect(redact('nothing here', [])).toBe('nothing here')
    expect(redact('a=b', [''])).toBe('a=b')
  })
})
