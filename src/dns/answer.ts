import * as packet from 'dns-packet'
import type { Authority, DnsRecord, Zone } from './types'

/**
 * The answer to one DNS message, as an authoritative-only server gives it (design.md, DNS
 * details; RFC 1034 4.3.2, RFC 2308, RFC 6891):
 *
 * - AA on every answer from a zone; RD is echoed, RA never set (no recursion here).
 * - A name outside every zone is REFUSED; an unknown name in a zone is NXDOMAIN and a known name
 *   without the asked type is NODATA, both with the zone's SOA in the authority section, its TTL
 *   capped at the SOA minimum (the negative-caching time).
 * - Names match case-insensitively and the question comes back exactly as asked (resolvers
 *   using 0x20 case randomisation check it).
 * - A CNAME is followed inside the same zone; the resolver follows it elsewhere.
 * - NS and SOA answers carry the addresses (A, AAAA) of the zone's in-zone nameservers in the
 *   additional section, as nsd, Knot and BIND do (RFC 1034 4.3.2 step 6, RFC 9471): a resolver
 *   gets `ns1.{zone}`'s address with the answer that names it. When they do not fit over UDP they
 *   are left out before anything else (they are optional in an answer, unlike in a referral).
 * - EDNS0: an OPT in the query gets one back advertising 1232 bytes (the DNS flag day size); a
 *   version above 0 is BADVERS. Over UDP the answer must fit 512 bytes, or the size the client
 *   advertised (up to 1232); one that does not is sent empty with TC, and the client asks again
 *   over TCP, where it comes whole.
 * - Zone transfers (AXFR, IXFR) are REFUSED; opcodes other than QUERY are NOTIMP; a message that
 *   does not parse, or holds other than one question, is FORMERR. A response is never answered.
 */

export type Transport = 'udp' | 'tcp'

const RCODE = { NOERROR: 0, FORMERR: 1, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const
/** The payload size Berth advertises and the most it sends over UDP (RFC 9715's advice). */
export const EDNS_UDP_SIZE = 1232
const CLASSIC_UDP_SIZE = 512
const TCP_MAX = 65_535
const MAX_CNAME_HOPS = 8

type Packet = packet.Packet
type Answer = packet.Answer
type Question = packet.Question

/** Answers kept per authority: at most this many, all dropped when its generation moves. */
const CACHE_ENTRIES = 10_000
const caches = new WeakMap<Authority, { generation: number; answers: Map<string, Buffer> }>()

/**
 * The bytes to send back for `query`, or null when nothing is to be sent (not a query at all).
 *
 * The same query (every byte but the id, the name's case included) gets the same answer until
 * the zones change, so answers are kept by those bytes when the authority tells its generation:
 * building one with dns-packet is most of the time spent per query.
 */
export function respond(query: Buffer, authority: Authority, transport: Transport): Buffer | null {
  if (!authority.generation || query.length < 12) return build(query, authority, transport)
  const generation = authority.generation()
  let cache = caches.get(authority)
  if (!cache || cache.generation !== generation) caches.set(authority, (cache = { generation, answers: new Map() }))
  const key = transport + query.toString('latin1', 2)
  const kept = cache.answers.get(key)
  if (kept) {
    const out = Buffer.from(kept)
    query.copy(out, 0, 0, 2)
    return out
  }
  const answer = build(query, authority, transport)
  if (answer) {
    if (cache.answers.size >= CACHE_ENTRIES) cache.answers.clear()
    cache.answers.set(key, answer)
  }
  return answer
}

function build(query: Buffer, authority: Authority, transport: Transport): Buffer | null {
  if (query.length < 12) return null
  const id = query.readUInt16BE(0)
  const flags = query.readUInt16BE(2)
  if (flags & 0x8000) return null // a response: answering it could loop between two servers
  const rd = flags & packet.RECURSION_DESIRED
  const opcode = (flags >> 11) & 0xf

  let decoded: Packet
  try {
    decoded = packet.decode(query)
  } catch {
    return headerOnly(id, rd, opcode, RCODE.FORMERR)
  }
  const questions = decoded.questions ?? []
  const opts = (decoded.additionals ?? []).filter((a) => a.type === 'OPT') as packet.OptAnswer[]
  const opt = opts[0]
  const ednsOpt = (ednsError: number): packet.OptAnswer[] =>
    opt ? [{ name: '.', type: 'OPT', udpPayloadSize: EDNS_UDP_SIZE, extendedRcode: ednsError, ednsVersion: 0, flags: 0, flag_do: false, options: [] }] : []
  const reply = (rcode: number, sections: Partial<Resolution> = {}, aa = false, ednsError = 0): Buffer =>
    encodeFitting({
      id,
      type: 'response',
      flags: (opcode << 11) | rd | (aa ? packet.AUTHORITATIVE_ANSWER : 0) | (rcode & 0xf),
      questions,
      answers: sections.answers ?? [],
      authorities: sections.authorities ?? [],
      additionals: ednsOpt(ednsError),
    }, sections.glue ?? [], transport === 'tcp' ? TCP_MAX : opt ? Math.min(Math.max(opt.udpPayloadSize, CLASSIC_UDP_SIZE), EDNS_UDP_SIZE) : CLASSIC_UDP_SIZE)

  if (opcode !== 0) return reply(RCODE.NOTIMP)
  if (questions.length !== 1 || opts.length > 1) return reply(RCODE.FORMERR)
  // BADVERS is extended rcode 16: 1 in the OPT's upper bits, 0 in the header (RFC 6891 6.1.3).
  if (opt && (opt as { ednsVersion?: number }).ednsVersion) return reply(0, {}, false, 1)

  const question = questions[0]!
  if (question.class !== 'IN' && question.class !== 'ANY') return reply(RCODE.REFUSED)
  const name = question.name.toLowerCase()
  const zone = authority.zoneFor(name)
  if (!zone) return reply(RCODE.REFUSED)
  if (question.type === 'AXFR' || question.type === 'IXFR') return reply(RCODE.REFUSED)

  const result = resolve(zone, name, question)
  return reply(result.rcode, result, true)
}

interface Resolution {
  rcode: number
  answers: Answer[]
  authorities: Answer[]
  /** Addresses of in-zone nameservers, for the additional section. */
  glue?: Answer[]
}

/** The records that answer `question` in `zone`, following CNAMEs that stay in the zone. */
function resolve(zone: Zone, name: string, question: Question): Resolution {
  const answers: Answer[] = []
  const negative = (rcode: number): Resolution => ({ rcode, answers, authorities: [toAnswer(negativeSoa(zone))] })
  let current = name
  for (let hop = 0; hop <= MAX_CNAME_HOPS; hop++) {
    const records = zone.lookup(current)
    if (records === null) return negative(RCODE.NXDOMAIN)
    // The first owner name goes back as the question spelt it.
    const owner = hop === 0 ? question.name : current
    const wanted = (question.type as string) === 'ANY' ? anyAnswer(records) : records.filter((r) => r.type === question.type)
    if (wanted.length > 0) {
      for (const r of wanted) answers.push(toAnswer(r, owner))
      return { rcode: RCODE.NOERROR, answers, authorities: [], glue: glueFor(zone, wanted) }
    }
    const cname = records.find((r) => r.type === 'CNAME')
    if (!cname) return negative(RCODE.NOERROR)
    answers.push(toAnswer(cname, owner))
    const target = (cname.data as string).toLowerCase()
    if (!inZone(target, zone.apex)) return { rcode: RCODE.NOERROR, answers, authorities: [] }
    current = target
  }
  // A CNAME loop inside the zone: what has been found so far, as other servers do.
  return { rcode: RCODE.NOERROR, answers, authorities: [] }
}

/**
 * The A and AAAA records of the in-zone nameservers an NS or SOA answer points at: for NS, the
 * hosts it names; for SOA, the zone's nameservers (the NS RRset at the apex), as BIND and Knot
 * add them. Nameservers outside the zone get none (a resolver would not trust them: RFC 2181 5.4.1).
 */
function glueFor(zone: Zone, answered: DnsRecord[]): Answer[] {
  const kind = answered[0]!.type
  if (kind !== 'NS' && kind !== 'SOA') return []
  const servers = kind === 'NS' ? answered : (zone.lookup(zone.apex) ?? []).filter((r) => r.type === 'NS')
  const glue: Answer[] = []
  const seen = new Set<string>()
  for (const ns of servers) {
    const host = (ns.data as string).toLowerCase()
    if (seen.has(host) || !inZone(host, zone.apex)) continue
    seen.add(host)
    for (const r of zone.lookup(host) ?? []) if (r.type === 'A' || r.type === 'AAAA') glue.push(toAnswer(r))
  }
  return glue
}

/** True when `name` is `apex` or below it. */
const inZone = (name: string, apex: string) => name === apex || name.endsWith(`.${apex}`)

/** RFC 8482: an ANY query gets one RRset, not everything (no amplification through us). */
function anyAnswer(records: DnsRecord[]): DnsRecord[] {
  const first = records[0]
  return first ? records.filter((r) => r.type === first.type) : []
}

/** The SOA for a negative answer: its TTL is the lesser of its own and the minimum (RFC 2308 3). */
function negativeSoa(zone: Zone): DnsRecord {
  return { ...zone.soa, ttl: Math.min(zone.soa.ttl, zone.soa.data.minimum) }
}

function toAnswer(record: DnsRecord, name = record.name): Answer {
  return { name, type: record.type, class: 'IN', ttl: record.ttl, data: record.data } as Answer
}

/**
 * The encoded message with `glue` before its OPT, made to fit `limit` bytes: when it does not, the
 * glue is left out; when that is not enough, the answer and authority sections are dropped and TC
 * set, so the client retries over TCP (RFC 2181 9: no partial RRsets).
 */
function encodeFitting(message: Packet, glue: Answer[], limit: number): Buffer {
  const full = packet.encode(glue.length ? { ...message, additionals: [...glue, ...(message.additionals ?? [])] } : message)
  if (full.length <= limit) return full
  const bare = glue.length ? packet.encode(message) : full
  if (bare.length <= limit) return bare
  return packet.encode({ ...message, flags: (message.flags ?? 0) | packet.TRUNCATED_RESPONSE, answers: [], authorities: [] })
}

/** A header-only answer for a message that could not be read (its question cannot be echoed). */
function headerOnly(id: number, rd: number, opcode: number, rcode: number): Buffer {
  const out = Buffer.alloc(12)
  out.writeUInt16BE(id, 0)
  out.writeUInt16BE(0x8000 | (opcode << 11) | rd | rcode, 2)
  return out
}

/**
 * `answer` emptied to its header and question with TC set: what response-rate limiting sends
 * instead of a limited answer now and then (the "slip", src/dns/rate-limit.ts), so that a real
 * client asks again over TCP. Counts of the other sections are zeroed; the OPT stays when `query`
 * had one (RFC 6891 7: an EDNS query gets an EDNS answer), as the last 11 bytes of `answer`.
 */
export function truncatedAnswer(answer: Buffer, query: Buffer): Buffer {
  if (answer.length < 12) return answer
  const questionEnd = answer.readUInt16BE(4) === 1 ? endOfQuestion(answer, 12) : 12
  if (questionEnd < 0) return answer
  const keepOpt = answer.readUInt16BE(10) > 0 && hasOpt(query)
  const out = Buffer.alloc(questionEnd + (keepOpt ? OPT_BYTES : 0))
  answer.copy(out, 0, 0, questionEnd)
  out.writeUInt16BE(answer.readUInt16BE(2) | packet.TRUNCATED_RESPONSE, 2)
  out.writeUInt16BE(0, 6)
  out.writeUInt16BE(0, 8)
  out.writeUInt16BE(keepOpt ? 1 : 0, 10)
  if (keepOpt) answer.copy(out, questionEnd, answer.length - OPT_BYTES)
  return out
}

/** Berth's OPT record: root name, type, class (size), TTL (extended rcode, version, flags), no data. */
const OPT_BYTES = 11

/** The offset just past the question that starts at `offset`, or -1 when the bytes end first. */
function endOfQuestion(message: Buffer, offset: number): number {
  let at = offset
  while (at < message.length) {
    const length = message[at]!
    if (length === 0) return at + 5 <= message.length ? at + 5 : -1
    // A compression pointer ends the name (a question is written first, so it has none).
    if ((length & 0xc0) === 0xc0) return at + 6 <= message.length ? at + 6 : -1
    at += length + 1
  }
  return -1
}

/** True when the one-question `query` is followed by an OPT record (type 41). */
function hasOpt(query: Buffer): boolean {
  if (query.length < 12 || query.readUInt16BE(10) === 0) return false
  const end = endOfQuestion(query, 12)
  return end > 0 && end + 3 <= query.length && query[end] === 0 && query.readUInt16BE(end + 1) === 41
}
