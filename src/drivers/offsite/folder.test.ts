import { spawnSync } from 'bun'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { FolderDestination } from './folder'
import { InvalidOffsiteKeyError, OffsiteMissingError, OffsiteUnavailableError } from './types'

/** The file:// destination on real folders: a second disk here, a tiny tmpfs for a full one. */
const base = mkdtempSync(join(tmpdir(), 'berth-offsite-folder-'))
afterAll(() => rmSync(base, { recursive: true, force: true }))

function freshRoot(name: string): string {
  const root = join(base, name)
  mkdirSync(root)
  return root
}

/** Every file under `dir`, relative. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name).slice(dir.length + 1)).sort()
}

async function failureOf(work: Promise<unknown>): Promise<OffsiteUnavailableError> {
  const err = await work.then(() => null, (e: unknown) => e)
  expect(err).toBeInstanceOf(OffsiteUnavailableError)
  return err as OffsiteUnavailableError
}

describe('FolderDestination', () => {
  it('puts, lists under a prefix, gets, replaces and deletes', async () => {
    const dest = new FolderDestination(freshRoot('round'))
    expect(dest.describe).toBe(`file://${join(base, 'round')}`)
    expect(await dest.put('archives/s1/a.tar.zst.age', new Response('one').body!)).toEqual({ sizeBytes: 3 })
    await dest.put('archives/s2/b.tar.zst.age', new Response('two').body!)
    await dest.put('store/x.db.zst.age', new Response('store').body!)
    await dest.put('archives/s1/a.tar.zst.age', new Response('one again').body!)
    expect((await dest.list('archives/')).map((o) => o.key).sort()).toEqual(['archives/s1/a.tar.zst.age', 'archives/s2/b.tar.zst.age'])
    expect(await dest.list('archives/s1/')).toEqual([{ key: 'archives/s1/a.tar.zst.age', sizeBytes: 9, modifiedAt: expect.any(Number) }])
    expect(await new Response(await dest.get('archives/s1/a.tar.zst.age')).text()).toBe('one again')
    await dest.delete('store/x.db.zst.age')
    await dest.delete('store/x.db.zst.age')
    await expect(dest.get('store/x.db.zst.age')).rejects.toBeInstanceOf(OffsiteMissingError)
    await expect(dest.put('../x', new Response('x').body!)).rejects.toBeInstanceOf(InvalidOffsiteKeyError)
    await dest.probe()
    expect(await dest.list('probe/')).toEqual([])
  })

  it('an object being written is never listed nor readable, and appears whole at the end', async () => {
    const root = freshRoot('atomic')
    const dest = new FolderDestination(root)
    let sent = 0
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const body = new ReadableStream<Uint8Array>({
      async pull(c) {
        if (sent === 3) await gate
        if (sent === 6) return c.close()
        sent++
        c.enqueue(new Uint8Array(64 * 1024).fill(sent))
      },
    })
    const put = dest.put('archives/s1/slow.age', body)
    while (sent < 3) await Bun.sleep(5)
    await Bun.sleep(20)
    expect(filesUnder(root).some((f) => f.startsWith('archives/s1/slow.age.partial-'))).toBe(true)
    expect(await dest.list('')).toEqual([])
    await expect(dest.get('archives/s1/slow.age')).rejects.toBeInstanceOf(OffsiteMissingError)
    release()
    expect(await put).toEqual({ sizeBytes: 6 * 64 * 1024 })
    expect(filesUnder(root)).toEqual(['archives/s1/slow.age'])
    expect((await dest.list('')).map((o) => o.key)).toEqual(['archives/s1/slow.age'])
  })

  it('a body that fails leaves nothing, listed or on disk', async () => {
    const root = freshRoot('failing')
    const dest = new FolderDestination(root)
    let n = 0
    const body = new ReadableStream<Uint8Array>({
      pull(c) {
        if (++n > 3) return c.error(new Error('archive read failed'))
        c.enqueue(new Uint8Array(1024))
      },
    })
    await failureOf(dest.put('archives/s1/x.age', body))
    expect(await dest.list('')).toEqual([])
    expect(filesUnder(root)).toEqual([])
  })

  it('sweep removes partial files older than an hour and keeps younger ones; a partial is never listed', async () => {
    const root = freshRoot('sweep')
    const dest = new FolderDestination(root)
    mkdirSync(join(root, 'archives', 's1'), { recursive: true })
    const old = join(root, 'archives', 's1', 'a.age.partial-0011aabb')
    const young = join(root, 'archives', 's1', 'b.age.partial-2233ccdd')
    writeFileSync(old, 'half')
    writeFileSync(young, 'half')
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000)
    utimesSync(old, twoHoursAgo, twoHoursAgo)
    expect(await dest.list('')).toEqual([])
    await dest.sweep()
    expect(existsSync(old)).toBe(false)
    expect(readFileSync(young, 'utf8')).toBe('half')
  })

  it('a root that is not there fails as bucket, and is not created', async () => {
    const missing = join(base, 'not-mounted')
    const dest = new FolderDestination(missing)
    for (const attempt of [() => dest.put('a/b', new Response('x').body!), () => dest.list(''), () => dest.get('a/b'), () => dest.probe()]) {
      const err = await failureOf(attempt())
      expect(err.kind).toBe('bucket')
      expect(err.message).toContain(missing)
    }
    expect(existsSync(missing)).toBe(false)
    await dest.sweep()
  })

  it('a full destination (a 1 MiB tmpfs) fails as full, leaves no partial, and takes what fits after', async () => {
    const root = freshRoot('full')
    const mounted = spawnSync(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'berth-test-full', root])
    expect(mounted.stderr.toString()).toBe('')
    try {
      const dest = new FolderDestination(root)
      const big = new Response(new Uint8Array(2 * 1024 * 1024).fill(7)).body!
      const err = await failureOf(dest.put('archives/s1/big.age', big))
      expect(err.kind).toBe('full')
      expect(err.message).toContain('full')
      expect(await dest.list('')).toEqual([])
      expect(filesUnder(root)).toEqual([])
      expect(await dest.put('manifests/m.json.age', new Response('small').body!)).toEqual({ sizeBytes: 5 })
    } finally {
      spawnSync(['umount', root])
    }
  })
})
