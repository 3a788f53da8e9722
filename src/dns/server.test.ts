import { createSocket } from 'node:dgram'
import { connect } from 'node:net'
import * as packet from 'dns-packet'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../lib/logger'
import { type RunningDnsServer, startDnsServer } from './server'
import type { Authority, DnsRecord, Zone } from './types'

const SOA: DnsRecord & { type: 'SOA' } = {
  name: 'zone.test', type: 'SOA', ttl: 3600,
  data: { mname: 'ns1.zone.test', rname: 'hostmaster.zone.test', serial: 1, refresh: 3600, retry: 600, expire: 1209600, minimum: 300 },
}
const records = new Map<string, DnsRecord[]>([['a.zone.test', [{ name: 'a.zone.test', type: 'A', ttl: 60, data: '192.0.2.1' }]]])
const zone: Zone = { apex: 'zone.test', soa: SOA, lookup: (name) => (name === 'zone.test' ? [SOA] : records.get(name) ?? null) }
const authority: Authority = { zoneFor: (name) => (name === 'zone.test' || name.endsWith('.zone.test') ? zone : null) }

let server: RunningDnsServer
beforeAll(async () => {
  server = await startDnsServer({ authority, hostname: '127.0.0.1', port: 0, log: memoryLogger() })
})
afterAll(() => server.stop())

const query = (id: number, name: string) => packet.encode({ id, type: 'query', questions: [{ name, type: 'A', class: 'IN' }] })

/** A decoded answer, with the fields these tests read. */
interface Msg {
  id: number
  rcode: string
  answers: { data: unknown }[]
}
const decode = (bytes: Buffer) => packet.decode(bytes) as unknown as Msg

function overUdp(message: Buffer): Promise<Msg> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4')
    const timer = setTimeout(() => (socket.close(), reject(new Error('no UDP answer'))), 2000)
    socket.on('message', (msg) => {
      clearTimeout(timer)
      socket.close()
      resolve(decode(msg))
    })
    socket.send(message, server.port, '127.0.0.1')
  })
}

/** Sends `bytes` over one TCP connection and collects `count` length-prefixed answers. */
function overTcp(bytes: Buffer[], count: number): Promise<Msg[]> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1')
    let input = Buffer.alloc(0)
    const answers: Msg[] = []
    const timer = setTimeout(() => (socket.destroy(), reject(new Error(`only ${answers.length} of ${count} TCP answers`))), 3000)
    socket.on('data', (chunk) => {
      input = Buffer.concat([input, chunk as Buffer])
      while (input.length >= 2 && input.length >= 2 + input.readUInt16BE(0)) {
        answers.push(decode(input.subarray(2, 2 + input.readUInt16BE(0))))
        input = input.subarray(2 + input.readUInt16BE(0))
      }
      if (answers.length === count) {
        clearTimeout(timer)
        socket.end()
        resolve(answers)
      }
    })
    socket.on('error', reject)
    // Written in separate pieces, so a message may arrive split across reads.
    void (async () => {
      for (const b of bytes) {
        socket.write(b)
        await new Promise((r) => setTimeout(r, 5))
      }
    })()
  })
}

const framed = (message: Buffer) => {
  const prefix = Buffer.alloc(2)
  prefix.writeUInt16BE(message.length)
  return Buffer.concat([prefix, message])
}

describe('the DNS server', () => {
  it('answers over UDP and TCP on the same port', async () => {
    const udp = await overUdp(query(1, 'a.zone.test'))
    expect(udp.answers.map((a) => a.data)).toEqual(['192.0.2.1'])
    const [tcp] = await overTcp([framed(query(2, 'a.zone.test'))], 1)
    expect(tcp!.id).toBe(2)
    expect(tcp!.answers.map((a) => a.data)).toEqual(['192.0.2.1'])
  })

  it('answers pipelined TCP queries in order, even when a message arrives split in pieces', async () => {
    const all = Buffer.concat([framed(query(10, 'a.zone.test')), framed(query(11, 'missing.zone.test')), framed(query(12, 'elsewhere.test'))])
    const answers = await overTcp([all.subarray(0, 1), all.subarray(1, 20), all.subarray(20)], 3)
    expect(answers.map((a) => [a.id, a.rcode])).toEqual([[10, 'NOERROR'], [11, 'NXDOMAIN'], [12, 'REFUSED']])
  })

  it('keeps answering after garbage on both transports', async () => {
    const socket = createSocket('udp4')
    await new Promise<void>((r) => socket.send(Buffer.from('not dns at all'), server.port, '127.0.0.1', () => r()))
    socket.close()
    const tcp = connect(server.port, '127.0.0.1')
    await new Promise<void>((r) => tcp.on('connect', () => r()))
    tcp.end(Buffer.from([0, 5, 1, 2, 3, 4, 5]))
    expect((await overUdp(query(3, 'a.zone.test'))).answers).toHaveLength(1)
  })

  it('takes a change in the zones in the very next answer', async () => {
    records.set('new.zone.test', [{ name: 'new.zone.test', type: 'A', ttl: 60, data: '192.0.2.99' }])
    expect((await overUdp(query(4, 'new.zone.test'))).answers.map((a) => a.data)).toEqual(['192.0.2.99'])
    records.delete('new.zone.test')
    expect((await overUdp(query(5, 'new.zone.test'))).answers).toEqual([])
  })
})

describe('the DNS server with response-rate limiting', () => {
  let limited: RunningDnsServer
  beforeAll(async () => {
    limited = await startDnsServer({ authority, hostname: '127.0.0.1', port: 0, log: memoryLogger(), rateLimit: { responsesPerSecond: 5, slip: 2, ipv4Prefix: 24, ipv6Prefix: 56 } })
  })
  afterAll(() => limited.stop())

  /**
   * Sends `count` queries from `source` at once; the answers that come until 500 ms after the
   * last one, and the seconds from the first query to the last answer.
   */
  async function flood(source: string, count: number): Promise<{ answers: Decoded[]; seconds: number }> {
    const socket = createSocket('udp4')
    await new Promise<void>((r) => socket.bind(0, source, () => r()))
    const answers: Decoded[] = []
    let last = performance.now()
    socket.on('message', (msg) => {
      answers.push(packet.decode(msg) as unknown as Decoded)
      last = performance.now()
    })
    const started = performance.now()
    for (let i = 0; i < count; i++) socket.send(query(i, 'a.zone.test'), limited.port, '127.0.0.1')
    while (performance.now() - last < 500) await new Promise((r) => setTimeout(r, 50))
    socket.close()
    return { answers, seconds: (last - started) / 1000 }
  }
  type Decoded = Msg & { flag_tc: boolean }

  it('answers a flood from one prefix with its budget, then TC to every second query and nothing to the rest; another prefix and TCP are served', async () => {
    const { answers, seconds } = await flood('127.0.0.1', 60)
    const whole = answers.filter((a) => !a.flag_tc)
    const slipped = answers.filter((a) => a.flag_tc)
    // 5 at once, plus what refills at 5 a second while the flood is being answered.
    expect(whole.length).toBeGreaterThanOrEqual(5)
    expect(whole.length).toBeLessThanOrEqual(5 + Math.ceil(5 * seconds) + 1)
    expect(whole.every((a) => a.answers.length === 1)).toBe(true)
    expect(slipped.every((a) => a.answers.length === 0)).toBe(true)
    expect(Math.abs(slipped.length - (60 - whole.length) / 2)).toBeLessThanOrEqual(1)
    // 127.0.1.1 is another /24: its own budget.
    expect((await flood('127.0.1.1', 3)).answers.filter((a) => !a.flag_tc)).toHaveLength(3)
    // TCP is never limited.
    const tcpAnswers = await new Promise<Msg[]>((resolve, reject) => {
      const socket = connect(limited.port, '127.0.0.1')
      let input = Buffer.alloc(0)
      const got: Msg[] = []
      socket.on('data', (chunk) => {
        input = Buffer.concat([input, chunk as Buffer])
        while (input.length >= 2 && input.length >= 2 + input.readUInt16BE(0)) {
          got.push(decode(input.subarray(2, 2 + input.readUInt16BE(0))))
          input = input.subarray(2 + input.readUInt16BE(0))
        }
        if (got.length === 20) (socket.end(), resolve(got))
      })
      socket.on('error', reject)
      socket.write(Buffer.concat(Array.from({ length: 20 }, (_, i) => framed(query(100 + i, 'a.zone.test')))))
    })
    expect(tcpAnswers.every((a) => a.answers.length === 1)).toBe(true)
  })
})
