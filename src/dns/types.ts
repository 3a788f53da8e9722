/**
 * What Berth's authoritative DNS server (src/dns/server.ts) serves: zones built by the domain
 * layer from the store (sites_domain with every site's names and records, and every registered or
 * linked domain). The server only reads them; it holds no state of its own, so a change the
 * domain layer makes is in the next answer.
 *
 * Names are lower-case, absolute, without the trailing dot (`shop.sites.example.com`).
 */

export type RecordType = 'A' | 'AAAA' | 'CNAME' | 'MX' | 'TXT' | 'SRV' | 'NS' | 'SOA'

export interface SoaData {
  /** The primary nameserver. */
  mname: string
  /** The hostmaster's mailbox as a name (`hostmaster.example.com`). */
  rname: string
  /** Grows with every change of the zone. */
  serial: number
  refresh: number
  retry: number
  expire: number
  /** Negative-caching TTL (RFC 2308): NXDOMAIN and NODATA answers are cached this long. */
  minimum: number
}

/** One resource record; `data` has the shape dns-packet reads and writes for its type. */
export type DnsRecord = { name: string; ttl: number } & (
  | { type: 'A'; data: string }
  | { type: 'AAAA'; data: string }
  | { type: 'CNAME'; data: string }
  | { type: 'NS'; data: string }
  | { type: 'MX'; data: { preference: number; exchange: string } }
  /** Each string is one character-string of at most 255 bytes (longer values are split by the builder). */
  | { type: 'TXT'; data: string[] }
  | { type: 'SRV'; data: { priority: number; weight: number; port: number; target: string } }
  | { type: 'SOA'; data: SoaData }
)

export interface Zone {
  /** The zone's apex. */
  readonly apex: string
  /** The zone's SOA record (name = apex), sent in the authority section of NXDOMAIN and NODATA. */
  readonly soa: DnsRecord & { type: 'SOA' }
  /**
   * Every record at `name` (inside this zone), the apex's SOA and NS included. `[]` when the name
   * exists only because names below it do (an empty non-terminal: NODATA); `null` when the name
   * does not exist (NXDOMAIN).
   */
  lookup(name: string): DnsRecord[] | null
}

export interface Authority {
  /**
   * The zone `name` falls in: the one whose apex is `name` or the longest apex that `name` ends
   * with (`.apex`); null when `name` is outside every zone (the server answers REFUSED).
   */
  zoneFor(name: string): Zone | null
  /**
   * A number that moves whenever any zone may have changed. When given, the server keeps the
   * bytes of recent answers and reuses them until it moves; without it, every answer is built.
   */
  generation?(): number
}
