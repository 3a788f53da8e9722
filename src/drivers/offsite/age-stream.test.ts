import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { identitiesOf } from './age'
import { openStream, sealStream } from './age-stream'

/**
 * The age payload of ./age-stream.ts against Debian's `age`, the format's reference: each opens
 * what the other sealed, at every size around the 64 KiB chunk boundaries, and a damaged,
 * truncated or extended file never opens.
 */
const dir = mkdtempSync(join(tmpdir(), 'berth-age-stream-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const keygen = Bun.spawnSync(['age-keygen', '-o', join(dir, 'id.txt')], { stderr: 'pipe' })
if (keygen.exitCode !== 0) throw new Error(`age-keygen: ${keygen.stderr.toString()} (scripts/test.sh installs age)`)
const identityText = readFileSync(join(dir, 'id.txt'), 'utf8')
const identities = identitiesOf(identityText)
const recipient = /age1[0-9a-z]+/.exec(identityText)![0]

const K = 64 * 1024
const SIZES = [0, 1, K - 1, K, K + 1, 2 * K, 2 * K + 17, 5 * K + 3, 1_000_000]

/** Bytes as a stream of uneven pieces, as a file or a socket gives them. */
function piecewise(bytes: Uint8Array, piece = 7_777): ReadableStream<Uint8Array> {
  let at = 0
  return new ReadableStream({
    pull(c) {
      if (at >= bytes.length) return c.close()
      c.enqueue(bytes.slice(at, at + piece))
      at += piece
    },
  })
}

const all = async (s: ReadableStream<Uint8Array>) => new Uint8Array(await new Response(s).arrayBuffer())

describe('the age payload, sealed and opened with libsodium', () => {
  it.each(SIZES)('%i bytes: Debian\'s age opens what Berth seals, and Berth opens what age seals', async (size) => {
    const plain = crypto.getRandomValues(new Uint8Array(size))
    const sealed = await all(await sealStream(piecewise(plain), [recipient]))
    writeFileSync(join(dir, 'berth.age'), sealed)
    const byAge = Bun.spawnSync(['age', '-d', '-i', join(dir, 'id.txt'), join(dir, 'berth.age')], { stdout: 'pipe', stderr: 'pipe' })
    expect(byAge.stderr.toString()).toBe('')
    expect(Buffer.compare(byAge.stdout, Buffer.from(plain))).toBe(0)

    writeFileSync(join(dir, 'plain'), plain)
    expect(Bun.spawnSync(['age', '-r', recipient, '-o', join(dir, 'age.age'), join(dir, 'plain')]).exitCode).toBe(0)
    const opened = await all(await openStream(piecewise(new Uint8Array(readFileSync(join(dir, 'age.age'))), 1_000), identities))
    expect(Buffer.compare(Buffer.from(opened), Buffer.from(plain))).toBe(0)
  })

  it('never opens a file with a flipped byte, a chunk cut off, bytes added, or for another identity', async () => {
    const plain = crypto.getRandomValues(new Uint8Array(3 * K + 5))
    const sealed = await all(await sealStream(piecewise(plain), [recipient]))
    const headerLength = sealed.length - 16 - (plain.length + 4 * 16)
    const flipped = sealed.slice()
    flipped[headerLength + 16 + K + 100]! ^= 1
    const cut = sealed.slice(0, sealed.length - (5 + 16))
    const added = new Uint8Array([...sealed, 0, 1, 2])
    for (const bad of [flipped, cut, added]) {
      await expect(all(await openStream(piecewise(bad), identities))).rejects.toThrow(/age: /)
    }
    const other = Bun.spawnSync(['age-keygen'], { stdout: 'pipe' }).stdout.toString()
    await expect(openStream(piecewise(sealed), identitiesOf(other))).rejects.toThrow()
    await expect(openStream(piecewise(plain), identities)).rejects.toThrow(/Not an age file/)
  })
})
