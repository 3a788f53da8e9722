import { describe, expect, it } from 'vitest'
import { partSizeFor } from './s3'

const MiB = 1024 * 1024
const GiB = 1024 * MiB

describe('the part size of an S3 upload (at most 10,000 parts)', () => {
  it('keeps the configured 5 MiB parts for a body they hold, and for one of unknown size', () => {
    expect(partSizeFor(undefined, 5 * MiB)).toBe(5 * MiB)
    expect(partSizeFor(1 * GiB, 5 * MiB)).toBe(5 * MiB)
    expect(partSizeFor(43 * GiB, 5 * MiB)).toBe(5 * MiB)
  })

  it('makes the parts big enough for an 80 GB archive (a dedicated plan full to its disk), in whole MiB, with room to spare', () => {
    const expected = 80e9
    const part = partSizeFor(expected, 5 * MiB)
    expect(part % MiB).toBe(0)
    expect(part).toBeGreaterThan(5 * MiB)
    expect(Math.ceil(expected / part)).toBeLessThanOrEqual(9_000)
    // A body 10 % larger than said still fits in 10,000 parts.
    expect(Math.ceil((expected * 1.1) / part)).toBeLessThanOrEqual(10_000)
  })
})
