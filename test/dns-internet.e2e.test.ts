import { spawnSync } from 'bun'
import { createSocket } from 'node:dgram'
import * as packet from 'dns-packet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort, startBerth, type Berth } from './helpers/binary'

/**
 * Berth's DNS as the open internet needs it (issue 22, part 7), on the compiled binary with real
 * `dig` and real sockets: glue in NS and SOA answers, and response-rate limiting of UDP answers
 * per client prefix. The rate is set low (20 a second) so that a flood is a few hundred packets
 * and what is limited follows from the counts, not from timing.
 */
const RATE = 20
let berth: Berth
let dnsPort = 0

/** Runs dig against Berth's DNS server from `source`; `args` are dig's (name, type, +options). */
function dig(source: string, ...args: string[]) {
  const p = spawnSync(['dig', '@127.0.0.1', '-p', String(dnsPort), '-b', source, '+norecurse', '+time=2', '+tries=1', ...args], { stdout: 'pipe', stderr: 'pipe' })
  const text = p.stdout.toString() + p.stderr.toString()
  const section = (title: string) => {
    const m = new RegExp(`;; ${title} SECTION:\\n([\\s\\S]*?)(?:\\n\\n|$)`).exec(text)
    return m ? m[1]!.split('\n').filter((l) => l && !l.startsWith(';')).map((l) => l.split(/\s+/)) : []
  }
  const flags = (/;; flags: ([^;]*);/.exec(text)?.[1] ?? '').trim().split(/\s+/)
  return { status: /status: (\w+)/.exec(text)?.[1] ?? '', flags, answer: section('ANSWER'), additional: section('ADDITIONAL'), text }
}

beforeAll(async () => {
  dnsPort = await freePort()
  berth = await startBerth({
    env: { BERTH_DNS_LISTEN: `127.0.0.1:${dnsPort}`, BERTH_DNS_PUBLIC_IPV6: '::1', BERTH_DNS_RRL_RESPONSES_PER_SECOND: String(RATE) },
  })
}, 60_000)
afterAll(async () => {
  await berth?.dispose()
})

describe("glue in Berth's answers", () => {
  it('gives the addresses of the in-zone nameservers in the additional section of NS and SOA answers, over UDP and TCP', () => {
    const glue = ['ns1.localhost. A 127.0.0.1', 'ns1.localhost. AAAA ::1', 'ns2.localhost. A 127.0.0.1', 'ns2.localhost. AAAA ::1']
    // From 127.0.3.1: a prefix of its own, whatever the flood below does to 127.0.0.0/24.
    for (const transport of [[], ['+tcp']]) {
      const ns = dig('127.0.3.1', 'localhost', 'NS', ...transport)
      expect(ns.status, ns.text).toBe('NOERROR')
      expect(ns.flags).toContain('aa')
      expect(ns.answer.map((r) => r[4]).sort()).toEqual(['ns1.localhost.', 'ns2.localhost.'])
      expect(ns.additional.map((r) => `${r[0]} ${r[3]} ${r[4]}`).sort()).toEqual(glue)
      const soa = dig('127.0.3.1', 'localhost', 'SOA', ...transport)
      expect(soa.answer.map((r) => r[3])).toEqual(['SOA'])
      expect(soa.additional.map((r) => `${r[0]} ${r[3]} ${r[4]}`).sort()).toEqual(glue)
    }
    // Other answers carry nothing extra.
    expect(dig('127.0.3.1', 'ns1.localhost', 'A').additional).toEqual([])
  })
})

describe('response-rate limiting', () => {
  interface Tally {
    whole: number
    truncated: packet.Packet[]
  }

  /**
   * Sends `count` queries from each source at once, in the order given; what each source gets back
   * until 500 ms after the last answer, and the seconds from the first query to the last answer.
   */
  async function flood(sources: [address: string, count: number][]) {
    const sockets = await Promise.all(sources.map(async ([address]) => {
      const socket = createSocket('udp4')
      await new Promise<void>((r) => socket.bind(0, address, () => r()))
      socket.setRecvBufferSize(4 << 20)
      return socket
    }))
    const tallies: Tally[] = sources.map(() => ({ whole: 0, truncated: [] }))
    let last = performance.now()
    sockets.forEach((socket, i) => socket.on('message', (msg) => {
      const answer = packet.decode(msg)
      if ((answer.flags! & packet.TRUNCATED_RESPONSE) !== 0) tallies[i]!.truncated.push(answer)
      else tallies[i]!.whole++
      last = performance.now()
    }))
    const started = performance.now()
    const q = (id: number) => packet.encode({ id, type: 'query', questions: [{ name: 'localhost', type: 'SOA', class: 'IN' }] })
    sources.forEach(([, count], i) => {
      for (let n = 0; n < count; n++) sockets[i]!.send(q(n), dnsPort, '127.0.0.1')
    })
    for (let quiet = 0; quiet < 500; quiet = performance.now() - last) await Bun.sleep(50)
    for (const socket of sockets) socket.close()
    return { tallies, seconds: (last - started) / 1000 }
  }

  it('answers a flood from one address with its budget, sends TC to every second query past it and drops the rest, while another prefix is served', async () => {
    const FLOOD = 300
    const { tallies: [flooder, neighbour, other], seconds } = await flood([['127.0.0.1', FLOOD], ['127.0.0.2', 20], ['127.0.1.2', RATE]])
    // 127.0.0.1 and 127.0.0.2 share a /24, so one budget: one second's worth at once, plus what
    // refilled while the flood was being answered.
    const whole = flooder!.whole + neighbour!.whole
    expect(whole).toBeGreaterThanOrEqual(RATE)
    expect(whole).toBeLessThanOrEqual(RATE + Math.ceil(RATE * seconds) + 1)
    expect(neighbour!.whole).toBeLessThan(20)
    // Slip 2: half of the limited answers go back empty with TC (so a real client retries over
    // TCP), the other half nowhere.
    const truncated = [...flooder!.truncated, ...neighbour!.truncated]
    const limited = FLOOD + 20 - whole
    expect(Math.abs(truncated.length - limited / 2)).toBeLessThanOrEqual(1)
    expect(truncated.every((a) => (a.answers ?? []).length === 0 && a.questions?.[0]?.name === 'localhost')).toBe(true)
    // 127.0.1.2 is in another /24: every one of its queries answered in full, during the flood.
    expect(other).toEqual({ whole: RATE, truncated: [] })

    // After the flood the other prefix still gets answers, from dig; and TCP is never limited,
    // so the flooded address itself gets its answer over it.
    const dug = dig('127.0.1.2', '+ignore', 'localhost', 'SOA')
    expect(dug.flags, dug.text).not.toContain('tc')
    expect(dug.answer.map((r) => r[3])).toEqual(['SOA'])
    const tcp = dig('127.0.0.1', '+tcp', 'localhost', 'SOA')
    expect(tcp.answer.map((r) => r[3]), tcp.text).toEqual(['SOA'])
  })
})
