import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { LocalArchiveStore } from './local'
import { ArchiveMissingError, InvalidArchiveKeyError } from './types'

const root = mkdtempSync(join(tmpdir(), 'berth-archives-'))
const work = mkdtempSync(join(tmpdir(), 'berth-archives-work-'))
afterAll(() => {
  rmSync(root, { recursive: true, force: true })
  rmSync(work, { recursive: true, force: true })
})
const store = new LocalArchiveStore(join(root, 'archives'))
const source = (name: string, text: string) => {
  const file = join(work, name)
  writeFileSync(file, text)
  return file
}

describe('LocalArchiveStore', () => {
  it('put consumes the file and stores it under the key; get copies it back; put again replaces', async () => {
    const from = source('a', 'first')
    expect(await store.put('site-1/a.tar.zst', from)).toEqual({ sizeBytes: 5 })
    expect(existsSync(from)).toBe(false)
    expect(readFileSync(join(root, 'archives', 'site-1', 'a.tar.zst'), 'utf8')).toBe('first')
    await store.put('site-1/a.tar.zst', source('b', 'second!'))
    await store.get('site-1/a.tar.zst', join(work, 'out'))
    expect(readFileSync(join(work, 'out'), 'utf8')).toBe('second!')
  })

  it('get of a missing key throws ArchiveMissingError; delete is idempotent and drops an empty site folder', async () => {
    await expect(store.get('site-1/none.tar.zst', join(work, 'x'))).rejects.toBeInstanceOf(ArchiveMissingError)
    await store.put('site-2/b.tar.zst', source('c', 'x'))
    await store.delete('site-2/b.tar.zst')
    await store.delete('site-2/b.tar.zst')
    expect(existsSync(join(root, 'archives', 'site-2'))).toBe(false)
  })

  it('read streams an archive whole (over several chunks), and throws ArchiveMissingError for a missing key', async () => {
    const big = 'x'.repeat(3 * 1024 * 1024 + 17)
    await store.put('site-4/big.tar.zst', source('g', big))
    const read = await store.read('site-4/big.tar.zst')
    expect(read.sizeBytes).toBe(Buffer.byteLength(big))
    expect(await new Response(read.stream).text()).toBe(big)
    await expect(store.read('site-4/none.tar.zst')).rejects.toBeInstanceOf(ArchiveMissingError)
  })

  it('list gives the keys under a prefix, never partial objects or the work folder', async () => {
    await store.put('site-3/one.tar.zst', source('d', '1'))
    await store.put('site-3/two.tar.zst', source('e', '2'))
    writeFileSync(join(root, 'archives', 'site-3', 'three.tar.zst.partial'), 'half')
    writeFileSync(join(root, 'archives', 'site-1', 'a.tar.zst.partial'), 'half')
    expect((await store.list('site-3/')).sort()).toEqual(['site-3/one.tar.zst', 'site-3/two.tar.zst'])
    expect(await store.list('site-9/')).toEqual([])
    expect((await store.list('')).sort()).toEqual(['site-1/a.tar.zst', 'site-3/one.tar.zst', 'site-3/two.tar.zst', 'site-4/big.tar.zst'])
  })

  it.each(['../etc/passwd', '/abs', 'a/../b', 'a//b', '.hidden/x', 'a/b c', '', 'a/'])('refuses the key %j before any I/O', async (key) => {
    await expect(store.put(key, source('f', 'x'))).rejects.toBeInstanceOf(InvalidArchiveKeyError)
    await expect(store.get(key, join(work, 'y'))).rejects.toBeInstanceOf(InvalidArchiveKeyError)
    await expect(store.delete(key)).rejects.toBeInstanceOf(InvalidArchiveKeyError)
    await expect(store.read(key)).rejects.toBeInstanceOf(InvalidArchiveKeyError)
  })
})
