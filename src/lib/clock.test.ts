import { describe, expect, it } from 'vitest'
import { iso } from './clock'

describe('iso', () => {
  it('writes what toISOString writes, for any time from 1800 to 2200', () => {
    const from = Date.UTC(1800, 0, 1)
    const to = Date.UTC(2200, 0, 1)
    for (let i = 0; i < 20_000; i++) {
      const ms = Math.floor(from + Math.random() * (to - from))
      expect(iso(ms)).toBe(new Date(ms).toISOString())
    }
  })

  it('writes the edges of a day, the epoch and dates before it', () => {
    for (const ms of [0, -1, 1, 86_399_999, 86_400_000, -86_400_000, -86_400_001, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(9999, 11, 31, 23, 59, 59, 999)]) {
      expect(iso(ms)).toBe(new Date(ms).toISOString())
    }
  })

  it('is toISOString for fractions and throws as it does for times that are not', () => {
    expect(iso(1.7)).toBe(new Date(1.7).toISOString())
    expect(() => iso(Number.NaN)).toThrow(RangeError)
    expect(() => iso(9e15)).toThrow(RangeError)
  })
})
