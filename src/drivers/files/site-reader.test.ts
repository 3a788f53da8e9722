import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FileError } from './errors'
import { HomeReader, HostSiteFiles } from './site-reader'
import { SiteNotRunnableError } from '../runtime/types'

/** The modules' read-only reader on a real folder tree; Berth runs as root, like these tests. */
let root: string
let homeDir: string
let reader: HomeReader
const outside = () => join(root, 'outside')
const inHome = (...parts: string[]) => join(homeDir, ...parts)

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'berth-reader-'))
  homeDir = join(root, 'home')
  mkdirSync(inHome('public', 'blog'), { recursive: true })
  mkdirSync(outside())
  writeFileSync(join(outside(), 'index.html'), '<title>CANARY host file</title>')
  writeFileSync(inHome('public', 'index.html'), '<title>Home</title>')
  writeFileSync(inHome('public', 'blog', 'post.html'), '<title>Post</title>')
  writeFileSync(inHome('public', '.hidden.html'), 'hidden')
  reader = HomeReader.open(homeDir)
})
afterEach(() => {
  reader.close()
  rmSync(root, { recursive: true, force: true })
})

describe('HomeReader: never out of the home, never through a link', () => {
  // Each row: a tenant's plant, the path a module then asks for.
  const escapes: [string, () => void, string][] = [
    ['a file that is a link to a host file', () => symlinkSync(join(outside(), 'index.html'), inHome('public', 'evil.html')), 'public/evil.html'],
    ['a relative link out of the home', () => symlinkSync('../../outside/index.html', inHome('public', 'evil.html')), 'public/evil.html'],
    ['a link to /etc/passwd', () => symlinkSync('/etc/passwd', inHome('public', 'passwd.html')), 'public/passwd.html'],
    ['a folder that is a link, then a file in it', () => symlinkSync(outside(), inHome('public', 'out')), 'public/out/index.html'],
    ['a link inside the home (still a link)', () => symlinkSync('index.html', inHome('public', 'alias.html')), 'public/alias.html'],
    ['public/ itself swapped for a link', () => (rmSync(inHome('public'), { recursive: true }), symlinkSync(outside(), inHome('public'))), 'public/index.html'],
    ['a /proc magic link', () => symlinkSync('/proc/self/root/etc/passwd', inHome('public', 'proc.html')), 'public/proc.html'],
  ]
  for (const [what, plant, path] of escapes) {
    it(`read, stat and list find nothing through ${what}`, async () => {
      plant()
      expect(await reader.read(path, 1024)).toBeNull()
      expect(reader.stat(path)).toBeNull()
      const folder = path.split('/').slice(0, -1).join('/')
      const listed = await reader.list(folder)
      for (const entry of listed ?? []) expect(entry.type === 'symlink' || !JSON.stringify(entry).includes('CANARY')).toBe(true)
    })
  }

  it('paths with .., absolute paths and NUL are refused before anything is opened', async () => {
    for (const path of ['../outside/index.html', 'public/../../outside/index.html', '/etc/passwd', 'public/index.html\0.txt']) {
      await expect(reader.read(path, 1024)).rejects.toBeInstanceOf(FileError)
    }
  })

  it('lists a folder sorted, hidden entries included, links as links, never their targets', async () => {
    symlinkSync(outside(), inHome('public', 'out'))
    const entries = await reader.list('public')
    expect(entries!.map((e) => [e.name, e.type])).toEqual([['.hidden.html', 'file'], ['blog', 'dir'], ['index.html', 'file'], ['out', 'symlink']])
    expect(await reader.list('public/out')).toBeNull()
    expect(await reader.list('public/index.html')).toBeNull()
    expect(await reader.list('nothing')).toBeNull()
    expect((await reader.list('public', 2))!.map((e) => e.name)).toEqual(['.hidden.html', 'blog'])
  })

  it('reads a regular file and stats it; list and read agree on size and mtime', async () => {
    const content = await reader.read('public/blog/post.html', 1024)
    expect(content).toMatchObject({ size: 19, truncated: false })
    expect(content!.data.toString()).toBe('<title>Post</title>')
    const listed = (await reader.list('public/blog'))![0]!
    expect([listed.size, listed.mtimeMs]).toEqual([content!.size, content!.mtimeMs])
    expect(reader.stat('public/blog')).toMatchObject({ name: 'blog', type: 'dir' })
    expect(reader.stat('public/missing.html')).toBeNull()
  })

  it('never opens a FIFO (no read blocks) nor a device node', async () => {
    execFileSync('mkfifo', [inHome('public', 'fifo.html')])
    execFileSync('mknod', [inHome('public', 'null.html'), 'c', '1', '3'])
    expect(await reader.read('public/fifo.html', 1024)).toBeNull()
    expect(await reader.read('public/null.html', 1024)).toBeNull()
    expect(reader.stat('public/fifo.html')).toMatchObject({ type: 'other' })
    expect((await reader.list('public'))!.find((e) => e.name === 'null.html')).toMatchObject({ type: 'other' })
  })

  it('reads at most the cap: a 5 MB page gives its first 512 KB, a 16 GB one as fast', async () => {
    writeFileSync(inHome('public', 'big.html'), Buffer.alloc(5 * 1024 * 1024, 'a'))
    const big = await reader.read('public/big.html', 512 * 1024)
    expect(big).toMatchObject({ size: 5 * 1024 * 1024, truncated: true })
    expect(big!.data.length).toBe(512 * 1024)
    // Sparse: 16 GB that read whole would not fit in memory (readFile fails with ENOMEM).
    writeFileSync(inHome('public', 'huge.html'), '<html><head><title>Huge</title>')
    truncateSync(inHome('public', 'huge.html'), 16 * 1024 ** 3)
    const started = performance.now()
    const huge = await reader.read('public/huge.html', 512 * 1024)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(huge!.data.length).toBe(512 * 1024)
    expect(huge!.data.subarray(0, 31).toString()).toBe('<html><head><title>Huge</title>')
  })

  it('is unusable once closed', async () => {
    reader.close()
    await expect(reader.list('public')).rejects.toThrow(/closed/)
  })
})

describe('HostSiteFiles', () => {
  it('opens the home for the call only, and a missing home is SiteNotRunnableError', async () => {
    const files = new HostSiteFiles(async (slug) => join(root, slug))
    expect(await files.read('home', async (r) => (await r.list('public'))!.length)).toBe(3)
    await expect(files.read('nowhere', () => 1)).rejects.toBeInstanceOf(SiteNotRunnableError)
  })
})
