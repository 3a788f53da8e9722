import { describe, expect, it } from 'vitest'
import { Demultiplexer, Tail } from './command-output'

const bytes = (s: string) => new TextEncoder().encode(s)
const text = (b: Uint8Array) => new TextDecoder().decode(b)
/** One frame of the engine's multiplexed stream. */
const frame = (stream: number, payload: string) => {
  const body = bytes(payload)
  const header = Buffer.alloc(8)
  header[0] = stream
  header.writeUInt32BE(body.length, 4)
  return Buffer.concat([header, body])
}

describe('Tail', () => {
  it('keeps the last bytes, across chunk boundaries, and says when the start was lost', () => {
    const tail = new Tail(5)
    tail.push(bytes('abc'))
    expect([text(tail.bytes()), tail.truncated]).toEqual(['abc', false])
    tail.push(bytes('de'))
    expect([text(tail.bytes()), tail.truncated]).toEqual(['abcde', false])
    tail.push(bytes('fg'))
    expect([text(tail.bytes()), tail.truncated, tail.total]).toEqual(['cdefg', true, 7])
    tail.push(bytes('0123456789'))
    expect(text(tail.bytes())).toBe('56789')
  })

  it('holds about `keep` bytes however long the stream', () => {
    const tail = new Tail(1000)
    for (let i = 0; i < 10_000; i++) tail.push(bytes(`${String(i).padStart(9, '0')}\n`))
    expect(text(tail.bytes())).toBe(Array.from({ length: 100 }, (_, k) => `${String(9900 + k).padStart(9, '0')}\n`).join(''))
    expect((tail as unknown as { held: number }).held).toBeLessThan(1010)
  })
})

describe('Demultiplexer', () => {
  it('sends each frame to its stream, whatever the cuts between chunks', () => {
    const wire = Buffer.concat([frame(1, 'out one\n'), frame(2, 'err\n'), frame(1, 'out two\n'), frame(1, '')])
    for (const size of [1, 3, 7, 8, 9, wire.length]) {
      const out = { stdout: new Tail(100), stderr: new Tail(100) }
      const demux = new Demultiplexer(out)
      for (let at = 0; at < wire.length; at += size) demux.push(wire.subarray(at, at + size))
      expect([text(out.stdout.bytes()), text(out.stderr.bytes())], `chunks of ${size}`).toEqual(['out one\nout two\n', 'err\n'])
    }
  })
})
