import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { busyboxErrors } from './sources'
import { tailLines, TRUNCATED_MARK, type TailOptions } from './tail'

const dir = mkdtempSync(join(tmpdir(), 'tail-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

let n = 0
async function tail(content: string | Uint8Array, opts: TailOptions) {
  const path = join(dir, `f${n++}.log`)
  writeFileSync(path, content)
  const f = await open(path, 'r')
  try {
    return await tailLines(f, opts)
  } finally {
    await f.close()
  }
}

const numbered = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}`)

describe('tailLines', () => {
  it('returns the last lines, oldest first, across chunk boundaries', async () => {
    const text = numbered(1000).join('\n') + '\n'
    for (const chunkBytes of [1, 7, 64, 4096, 1 << 20]) {
      expect(await tail(text, { lines: 3, chunkBytes })).toEqual(['line 998', 'line 999', 'line 1000'])
      expect(await tail(text, { lines: 1000, chunkBytes })).toEqual(numbered(1000))
    }
  })

  it('handles a last line without a newline, CRLF, blank lines, an empty file', async () => {
    expect(await tail('a\r\n\r\n\nb\nc', { lines: 10, chunkBytes: 2 })).toEqual(['a', 'b', 'c'])
    expect(await tail('', { lines: 10 })).toEqual([])
    expect(await tail('only', { lines: 10 })).toEqual(['only'])
  })

  it('filters with keep, still returning the newest matches', async () => {
    const text = numbered(500).join('\n')
    expect(await tail(text, { lines: 2, chunkBytes: 16, keep: (l) => l.endsWith('7') })).toEqual(['line 487', 'line 497'])
  })

  it('reads at most maxScanBytes from the end and drops the cut line', async () => {
    const text = numbered(100).join('\n') + '\n' // "line 100\n" is 9 bytes, "line 99\n" 8
    expect(await tail(text, { lines: 50, maxScanBytes: 20, chunkBytes: 4 })).toEqual(['line 99', 'line 100'])
  })

  it('cuts a huge line to maxLineBytes without holding it whole', async () => {
    const huge = 'x'.repeat(100_000)
    const out = await tail(`first\n${huge}\nlast\n`, { lines: 3, chunkBytes: 1000, maxLineBytes: 50 })
    expect(out).toEqual(['first', 'x'.repeat(50) + TRUNCATED_MARK, 'last'])
  })

  it('replaces bytes that are not UTF-8 and keeps multi-byte characters split across chunks whole', async () => {
    const bytes = new Uint8Array([...new TextEncoder().encode('é€😀\n'), 0xff, 0x41, 0x0a])
    expect(await tail(bytes, { lines: 5, chunkBytes: 3 })).toEqual(['é€😀', '\uFFFDA'])
  })
})

describe('busyboxErrors (static image, type=error)', () => {
  it('keeps failed requests with their url line and httpd messages, drops successful ones', async () => {
    const log = [
      '[::ffff:172.20.0.1]:100: url:/',
      '[::ffff:172.20.0.1]:100: response:200',
      '[::ffff:172.20.0.1]:101: url:/missing',
      '[::ffff:172.20.0.1]:102: url:/moved',
      '[::ffff:172.20.0.1]:101: response:404',
      '[::ffff:172.20.0.1]:102: response:301',
      'httpd: something went wrong',
      '[::ffff:172.20.0.1]:103: url:/x.cgi',
      '[::ffff:172.20.0.1]:103: response:501',
      '[::ffff:172.20.0.1]:104: url:/in-flight',
    ].join('\n')
    expect(await tail(log, { lines: 100, keep: busyboxErrors() })).toEqual([
      '[::ffff:172.20.0.1]:101: url:/missing',
      '[::ffff:172.20.0.1]:101: response:404',
      'httpd: something went wrong',
      '[::ffff:172.20.0.1]:103: url:/x.cgi',
      '[::ffff:172.20.0.1]:103: response:501',
    ])
  })
})
