import { describe, expect, it } from 'vitest'
import { DnsQueryCounts } from './query-counts'

/** A DNS message header with the given RCODE (RFC 1035 4.1.1: the low 4 bits of byte 3). */
const answer = (rcode: number) => Uint8Array.from([0x12, 0x34, 0x84, 0x80 | rcode, 0, 1, 0, 0, 0, 0, 0, 0])

describe('DnsQueryCounts', () => {
  it('counts answers by the response code in their header, named as DNS servers name them', () => {
    const counts = new DnsQueryCounts()
    for (const rcode of [0, 0, 3, 5, 0, 1, 15]) counts.answered(answer(rcode))
    counts.answered(new Uint8Array(2))
    expect(counts.byRcode()).toEqual([
      { rcode: 'NOERROR', count: 3 },
      { rcode: 'FORMERR', count: 1 },
      { rcode: 'NXDOMAIN', count: 1 },
      { rcode: 'REFUSED', count: 1 },
      { rcode: 'RCODE15', count: 1 },
    ])
  })
})
