/** The response codes' names (RFC 1035 4.1.1, RFC 2136), as DNS servers' metrics label them. */
const RCODE_NAMES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED', 'YXDOMAIN', 'YXRRSET', 'NXRRSET', 'NOTAUTH', 'NOTZONE']

/**
 * Queries answered by Berth's DNS server since start, by the response code of the answer sent
 * (a query rate-limited into silence, or one not answerable at all, is not counted). Counted
 * from the answer's header, so the wire code stays the one place that decides the code.
 *
 * @example
 * const counts = new DnsQueryCounts()
 * counts.answered(answer) // after sending it
 * counts.byRcode() // [{ rcode: 'NOERROR', count: 1 }]
 */
export class DnsQueryCounts {
  private counts = new Array<number>(16).fill(0)

  /** One answer sent: its header's RCODE (the low 4 bits of byte 3) is counted. */
  answered(answer: Uint8Array): void {
    if (answer.length >= 4) this.counts[answer[3]! & 0xf]!++
  }

  /** The codes answered so far, with their counts; codes never answered are left out. */
  byRcode(): { rcode: string; count: number }[] {
    return this.counts.flatMap((count, code) => (count > 0 ? [{ rcode: RCODE_NAMES[code] ?? `RCODE${code}`, count }] : []))
  }
}
