import * as packet from 'dns-packet'
import { describe, expect, it } from 'vitest'
import { EDNS_UDP_SIZE, respond, truncatedAnswer } from './answer'
import type { Authority, DnsRecord, Zone } from './types'

const SOA: DnsRecord & { type: 'SOA' } = {
  name: 'example.test', type: 'SOA', ttl: 3600,
  data: { mname: 'ns1.example.test', rname: 'hostmaster.example.test', serial: 7, refresh: 3600, retry: 600, expire: 1209600, minimum: 300 },
}
const RECORDS: DnsRecord[] = [
  SOA,
  { name: 'example.test', type: 'NS', ttl: 3600, data: 'ns1.example.test' },
  { name: 'example.test', type: 'NS', ttl: 3600, data: 'ns.elsewhere.invalid' },
  { name: 'ns1.example.test', type: 'A', ttl: 300, data: '192.0.2.53' },
  { name: 'ns1.example.test', type: 'AAAA', ttl: 300, data: '2001:db8::53' },
  { name: 'shop.example.test', type: 'A', ttl: 300, data: '192.0.2.10' },
  { name: 'shop.example.test', type: 'MX', ttl: 300, data: { preference: 10, exchange: 'mail.example.test' } },
  { name: 'www.example.test', type: 'CNAME', ttl: 300, data: 'shop.example.test' },
  { name: 'out.example.test', type: 'CNAME', ttl: 300, data: 'elsewhere.invalid' },
  { name: 'loop1.example.test', type: 'CNAME', ttl: 300, data: 'loop2.example.test' },
  { name: 'loop2.example.test', type: 'CNAME', ttl: 300, data: 'loop1.example.test' },
  { name: 'dangling.example.test', type: 'CNAME', ttl: 300, data: 'nothing.example.test' },
  { name: 'deep.below.example.test', type: 'A', ttl: 300, data: '192.0.2.11' },
  { name: 'big.example.test', type: 'TXT', ttl: 300, data: Array.from({ length: 8 }, (_, i) => `${i}`.repeat(200)) },
]

/** One zone held in memory, with the empty non-terminals a real zone has. */
const zone: Zone = {
  apex: 'example.test',
  soa: SOA,
  lookup(name) {
    const found = RECORDS.filter((r) => r.name === name)
    if (found.length) return found
    return RECORDS.some((r) => r.name.endsWith(`.${name}`)) ? [] : null
  },
}
const authority: Authority = { zoneFor: (name) => (name === 'example.test' || name.endsWith('.example.test') ? zone : null) }

function query(name: string, type: string, extra: Partial<packet.Packet> = {}): Buffer {
  return packet.encode({ id: 4242, type: 'query', flags: packet.RECURSION_DESIRED, questions: [{ name, type: type as 'A', class: 'IN' }], ...extra })
}
const withId = (message: Buffer, id: number) => {
  message.writeUInt16BE(id, 0)
  return message
}
const edns = (udpPayloadSize = 4096, ednsVersion = 0) => ({ additionals: [{ name: '.', type: 'OPT', udpPayloadSize, ednsVersion, extendedRcode: 0, flags: 0, flag_do: false, options: [] } as packet.Answer] })

/** A decoded answer, loosely typed: the tests read whichever fields they check. */
interface Decoded {
  id: number
  type: string
  rcode: string
  flag_aa: boolean
  flag_tc: boolean
  flag_ra: boolean
  flag_rd: boolean
  questions: { name: string }[]
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  answers: any[]
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  authorities: any[]
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  additionals: any[]
}

function ask(message: Buffer, transport: 'udp' | 'tcp' = 'udp') {
  const out = respond(message, authority, transport)
  expect(out).not.toBeNull()
  return { bytes: out!.length, ...(packet.decode(out!) as unknown as Decoded) }
}

describe('the DNS answer', () => {
  it('answers a name in the zone with its records, AA set, RD echoed, RA clear, the id kept', () => {
    const a = ask(query('shop.example.test', 'A'))
    expect(a).toMatchObject({ id: 4242, type: 'response', rcode: 'NOERROR', flag_aa: true, flag_rd: true, flag_ra: false })
    expect(a.answers).toEqual([expect.objectContaining({ name: 'shop.example.test', type: 'A', ttl: 300, data: '192.0.2.10' })])
    expect(ask(query('shop.example.test', 'MX')).answers[0]!.data).toEqual({ preference: 10, exchange: 'mail.example.test' })
  })

  it('matches names whatever their case and gives the question back exactly as asked', () => {
    const a = ask(query('ShOp.EXAMPLE.test', 'A'))
    expect(a.questions[0]!.name).toBe('ShOp.EXAMPLE.test')
    expect(a.answers.map((r: { name: string; data: unknown }) => [r.name, r.data])).toEqual([['ShOp.EXAMPLE.test', '192.0.2.10']])
  })

  it('is NXDOMAIN for an unknown name, with the SOA whose TTL is the negative-caching time', () => {
    const a = ask(query('nope.example.test', 'A'))
    expect(a).toMatchObject({ rcode: 'NXDOMAIN', flag_aa: true, answers: [] })
    expect(a.authorities).toEqual([expect.objectContaining({ name: 'example.test', type: 'SOA', ttl: 300 })])
    expect((a.authorities[0]!.data as { serial: number }).serial).toBe(7)
  })

  it('is NODATA (NOERROR, no answer, the SOA) for a known name without the type, and for a name that only has names below it', () => {
    for (const [name, type] of [['shop.example.test', 'AAAA'], ['below.example.test', 'A']] as const) {
      const a = ask(query(name, type))
      expect(a).toMatchObject({ rcode: 'NOERROR', flag_aa: true, answers: [] })
      expect(a.authorities.map((r) => r.type)).toEqual(['SOA'])
    }
  })

  it('refuses names outside its zones, without AA', () => {
    const a = ask(query('example.com', 'A'))
    expect(a).toMatchObject({ rcode: 'REFUSED', flag_aa: false, answers: [], authorities: [] })
    expect(ask(query('notexample.test', 'A')).rcode).toBe('REFUSED')
  })

  it('follows a CNAME inside the zone, stops at one that leaves it, and survives a loop', () => {
    expect(ask(query('www.example.test', 'A')).answers.map((r) => [r.type, r.data])).toEqual([['CNAME', 'shop.example.test'], ['A', '192.0.2.10']])
    expect(ask(query('www.example.test', 'CNAME')).answers.map((r) => r.type)).toEqual(['CNAME'])
    expect(ask(query('out.example.test', 'A')).answers.map((r) => [r.type, r.data])).toEqual([['CNAME', 'elsewhere.invalid']])
    const loop = ask(query('loop1.example.test', 'A'))
    expect(loop.rcode).toBe('NOERROR')
    expect(loop.answers.length).toBeGreaterThan(1)
    // RFC 6604: the rcode is the last name's, the CNAME stays in the answer.
    const dangling = ask(query('dangling.example.test', 'A'))
    expect(dangling).toMatchObject({ rcode: 'NXDOMAIN', answers: [expect.objectContaining({ type: 'CNAME' })] })
  })

  it('answers ANY with one RRset only (RFC 8482)', () => {
    const a = ask(query('shop.example.test', 'ANY'))
    expect(new Set(a.answers.map((r) => r.type)).size).toBe(1)
  })

  it('adds the addresses of in-zone nameservers to NS and SOA answers, before the OPT, and none elsewhere', () => {
    const glue = [['ns1.example.test', 'A', '192.0.2.53'], ['ns1.example.test', 'AAAA', '2001:db8::53']]
    for (const type of ['NS', 'SOA']) {
      const a = ask(query('example.test', type, edns()))
      expect(a.answers.length).toBeGreaterThan(0)
      // ns.elsewhere.invalid is outside the zone: no address for it.
      expect(a.additionals.map((r) => [r.name, r.type, r.data ?? null])).toEqual([...glue, ['.', 'OPT', null]])
      expect(ask(query('example.test', type)).additionals.map((r) => r.type)).toEqual(['A', 'AAAA'])
    }
    expect(ask(query('shop.example.test', 'MX')).additionals).toEqual([])
    expect(ask(query('nope.example.test', 'A')).additionals).toEqual([])
  })

  it('leaves the glue out, without TC, when it alone does not fit over UDP', () => {
    const many: DnsRecord[] = Array.from({ length: 6 }, (_, i) => ({ name: 'example.test', type: 'NS', ttl: 3600, data: `ns${i}.nameserver.example.test` }))
    const addresses: DnsRecord[] = many.flatMap((ns) => [{ name: ns.data as string, type: 'A', ttl: 300, data: '192.0.2.1' }, { name: ns.data as string, type: 'AAAA', ttl: 300, data: '2001:db8::1' }] as DnsRecord[])
    const big: Zone = { apex: 'example.test', soa: SOA, lookup: (n) => (n === 'example.test' ? many : addresses.filter((r) => r.name === n)) }
    const out = respond(query('example.test', 'NS'), { zoneFor: () => big }, 'udp')!
    const a = packet.decode(out) as unknown as Decoded
    expect(out.length).toBeLessThanOrEqual(512)
    expect(a).toMatchObject({ flag_tc: false, additionals: [] })
    expect(a.answers).toHaveLength(6)
    const tcp = packet.decode(respond(query('example.test', 'NS'), { zoneFor: () => big }, 'tcp')!) as unknown as Decoded
    expect(tcp.additionals).toHaveLength(12)
  })

  it('answers EDNS0 with an OPT of 1232 bytes, and BADVERS to a version above 0', () => {
    const a = ask(query('shop.example.test', 'A', edns()))
    const opt = a.additionals.find((r) => r.type === 'OPT') as packet.OptAnswer
    expect(opt.udpPayloadSize).toBe(EDNS_UDP_SIZE)
    expect(ask(query('shop.example.test', 'A')).additionals).toEqual([])
    const bad = ask(query('shop.example.test', 'A', edns(4096, 1)))
    const badOpt = bad.additionals.find((r) => r.type === 'OPT') as packet.OptAnswer
    expect(badOpt.extendedRcode).toBe(1)
    expect(bad.answers).toEqual([])
  })

  it('sets TC with empty sections when a UDP answer does not fit, and sends it whole over TCP', () => {
    const plain = ask(query('big.example.test', 'TXT'))
    expect(plain).toMatchObject({ flag_tc: true, answers: [], authorities: [] })
    expect(plain.bytes).toBeLessThanOrEqual(512)
    // 1232 bytes fit 8 × 200; a client advertising 4096 gets no more than Berth's 1232.
    const ednsBig = ask(query('big.example.test', 'TXT', edns(4096)))
    expect(ednsBig).toMatchObject({ flag_tc: true })
    const tcp = ask(query('big.example.test', 'TXT'), 'tcp')
    expect(tcp.flag_tc).toBe(false)
    expect((tcp.answers[0]!.data as Buffer[]).map(String)).toEqual(Array.from({ length: 8 }, (_, i) => `${i}`.repeat(200)))
    // An advertised size below 512 counts as 512 (RFC 6891 6.2.5).
    expect(ask(query('shop.example.test', 'A', edns(100))).flag_tc).toBe(false)
  })

  it('empties an answer to its question with TC for a rate-limited slip, keeping the OPT of an EDNS query', () => {
    for (const extra of [{}, edns()]) {
      const q = query('Example.test', 'NS', extra)
      const slip = truncatedAnswer(respond(q, authority, 'udp')!, q)
      const a = packet.decode(slip) as unknown as Decoded
      expect(a).toMatchObject({ id: 4242, type: 'response', rcode: 'NOERROR', flag_tc: true, flag_aa: true, answers: [], authorities: [] })
      expect(a.questions).toEqual([{ name: 'Example.test', type: 'NS', class: 'IN' }])
      expect(a.additionals.map((r) => r.type)).toEqual('additionals' in extra ? ['OPT'] : [])
    }
    const garbage = Buffer.from([1, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 9])
    const formerr = respond(garbage, authority, 'udp')!
    expect(truncatedAnswer(formerr, garbage).readUInt16BE(2) & packet.TRUNCATED_RESPONSE).toBeTruthy()
  })

  it('refuses zone transfers over either transport', () => {
    for (const type of ['AXFR', 'IXFR']) for (const t of ['udp', 'tcp'] as const) expect(ask(query('example.test', type), t).rcode).toBe('REFUSED')
  })

  it('answers NOTIMP to other opcodes, FORMERR to messages it cannot read, REFUSED to other classes, and nothing to responses', () => {
    const notify = query('example.test', 'SOA')
    notify.writeUInt16BE(notify.readUInt16BE(2) | (4 << 11), 2)
    expect(ask(notify).rcode).toBe('NOTIMP')
    const two = packet.encode({ id: 1, type: 'query', questions: [{ name: 'a.example.test', type: 'A', class: 'IN' }, { name: 'b.example.test', type: 'A', class: 'IN' }] })
    expect(ask(two).rcode).toBe('FORMERR')
    const garbage = Buffer.concat([query('shop.example.test', 'A').subarray(0, 14), Buffer.from([0xff, 0xff])])
    const formerr = respond(garbage, authority, 'udp')!
    expect(formerr.readUInt16BE(0)).toBe(4242)
    expect(formerr.readUInt16BE(2) & 0xf).toBe(1)
    const chaos = packet.encode({ id: 2, type: 'query', questions: [{ name: 'version.bind', type: 'TXT', class: 'CH' }] })
    expect(ask(chaos).rcode).toBe('REFUSED')
    const response = query('shop.example.test', 'A')
    response.writeUInt16BE(response.readUInt16BE(2) | 0x8000, 2)
    expect(respond(response, authority, 'udp')).toBeNull()
    expect(respond(Buffer.from([1, 2, 3]), authority, 'udp')).toBeNull()
  })

  it('reuses an answer for the same query only until the zones change, with each query\'s id and case', () => {
    let generation = 1
    const records = new Map<string, DnsRecord[]>([['a.example.test', [{ name: 'a.example.test', type: 'A', ttl: 60, data: '192.0.2.1' }]]])
    const changing: Authority = {
      zoneFor: (name) => (name.endsWith('example.test') ? { apex: 'example.test', soa: SOA, lookup: (n) => records.get(n) ?? null } : null),
      generation: () => generation,
    }
    const asked = (id: number, name: string) => packet.decode(respond(withId(query(name, 'A'), id), changing, 'udp')!) as unknown as Decoded
    expect(asked(1, 'a.example.test')).toMatchObject({ id: 1, answers: [expect.objectContaining({ data: '192.0.2.1' })] })
    expect(asked(2, 'a.example.test').id).toBe(2)
    expect(asked(3, 'A.Example.Test').answers[0].name).toBe('A.Example.Test')
    records.set('a.example.test', [{ name: 'a.example.test', type: 'A', ttl: 60, data: '192.0.2.2' }])
    expect(asked(4, 'a.example.test').answers[0].data).toBe('192.0.2.1')
    generation++
    expect(asked(5, 'a.example.test')).toMatchObject({ id: 5, answers: [expect.objectContaining({ data: '192.0.2.2' })] })
  })

  it('never throws on random bytes or truncated queries', () => {
    const real = query('shop.example.test', 'A', edns())
    let seed = 1
    const random = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff)
    for (let i = 0; i < 3000; i++) {
      const bytes = i % 2 ? Buffer.from(Array.from({ length: Math.floor(random() * 80) }, () => Math.floor(random() * 256))) : Buffer.from(real.subarray(0, Math.floor(random() * real.length)))
      if (i % 3 === 0 && bytes.length > 20) bytes[12 + Math.floor(random() * (bytes.length - 12))] = Math.floor(random() * 256)
      expect(() => respond(bytes, authority, i % 2 ? 'udp' : 'tcp')).not.toThrow()
    }
  })
})
