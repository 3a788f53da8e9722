import { execFileSync } from 'node:child_process'
import { chmodSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'
import { toCheckedTar } from './archive'
import { InvalidSourceError, SourceTooLargeError, TooManyFilesError, UnsafeSourceError } from './errors'
import { TarWriter } from './tar-writer'
import { hostileArchives } from '../../../test/helpers/hostile-archives'

/**
 * Issue 39, item 1: a tree deployed as an archive. Each hostile archive is made the way an
 * attacker would (GNU tar as root with real links, devices and FIFOs; Python's zipfile; a tar
 * written header by header) and refused with a message naming the member, leaving nothing in the
 * work folder; the trees that pass come out as a plain tar GNU tar extracts to the same files.
 */
const dir = mkdtempSync(join(tmpdir(), 'berth-sources-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const LIMITS = { maxBytes: 1 << 20, maxFiles: 100 }
let n = 0

/** A fresh work folder with `outside` beside it (which nothing may touch). */
function workFolder() {
  const base = join(dir, `w${n++}`)
  mkdirSync(join(base, 'work'), { recursive: true })
  mkdirSync(join(base, 'outside'))
  writeFileSync(join(base, 'outside', 'keep'), 'kept')
  return { base, work: join(base, 'work'), upload: join(base, 'work', 'upload') }
}

async function convert(file: string, format: 'gzip' | 'zip', limits = LIMITS) {
  const w = workFolder()
  try {
    const result = await toCheckedTar(Bun.file(file).stream(), format, w.upload, limits)
    return { ...w, result, error: null }
  } catch (error) {
    return { ...w, result: null, error: error as Error }
  }
}

/** Refused with `type` and a message holding `words`; the work folder empty, `outside` as it was. */
async function expectRefused(file: string, format: 'gzip' | 'zip', type: new (...a: never[]) => Error, words: string, limits = LIMITS) {
  const r = await convert(file, format, limits)
  expect(r.error, `${file} was accepted`).toBeInstanceOf(type)
  expect(r.error!.message).toContain(words)
  expect(readdirSync(r.work)).toEqual([])
  expect(readdirSync(join(r.base, 'outside'))).toEqual(['keep'])
  return r.error!
}

const { gnuTar, craftedTar, pyZip } = hostileArchives(join(dir, 'made'))

/** The checked tar extracted by GNU tar into a fresh folder. */
function extract(tarFile: string): string {
  const into = join(dir, `x${n++}`)
  mkdirSync(into)
  execFileSync('tar', ['-xf', tarFile, '-C', into])
  return into
}

describe('toCheckedTar: trees that pass', () => {
  it('a tar.gz with one top folder (git archive --prefix, GitHub) becomes that folder, links and modes kept', async () => {
    const file = gnuTar((root) => {
      mkdirSync(join(root, 'app-main', 'src', 'lib'), { recursive: true })
      writeFileSync(join(root, 'app-main', 'package.json'), '{"name":"app"}')
      writeFileSync(join(root, 'app-main', 'src', 'lib', 'a.js'), 'x'.repeat(5000))
      writeFileSync(join(root, 'app-main', 'run.sh'), '#!/bin/sh\n')
      chmodSync(join(root, 'app-main', 'run.sh'), 0o755)
      symlinkSync('src/lib/a.js', join(root, 'app-main', 'main.js'))
      symlinkSync('../package.json', join(root, 'app-main', 'src', 'pkg.json'))
      linkSync(join(root, 'app-main', 'package.json'), join(root, 'app-main', 'same.json'))
      mkdirSync(join(root, 'app-main', 'x'.repeat(120)))
      writeFileSync(join(root, 'app-main', 'x'.repeat(120), 'y'.repeat(130)), 'long')
    }, ['app-main'])
    const r = await convert(file, 'gzip')
    expect(r.error).toBeNull()
    expect(readdirSync(r.work)).toEqual(['upload.tar'])
    expect(r.result).toMatchObject({ tarFile: `${r.upload}.tar`, bytes: 14 + 5000 + 10 + 4 }) // the hard link adds no data
    const out = extract(r.result!.tarFile)
    expect(readdirSync(out).sort()).toEqual(['main.js', 'package.json', 'run.sh', 'same.json', 'src', 'x'.repeat(120)].sort())
    expect(readlinkSync(join(out, 'main.js'))).toBe('src/lib/a.js')
    expect(readFileSync(join(out, 'src', 'pkg.json'), 'utf8')).toBe('{"name":"app"}')
    expect(lstatSync(join(out, 'same.json')).ino).toBe(lstatSync(join(out, 'package.json')).ino)
    expect(lstatSync(join(out, 'run.sh')).mode & 0o777).toBe(0o755)
    expect(readFileSync(join(out, 'x'.repeat(120), 'y'.repeat(130)), 'utf8')).toBe('long')
  })

  it('a tar.gz of `.` keeps its top level as it is (two entries at the root: nothing stripped)', async () => {
    const file = gnuTar((root) => {
      mkdirSync(join(root, 'public'))
      writeFileSync(join(root, 'public', 'index.html'), 'hi')
      writeFileSync(join(root, 'server.js'), 'js')
    })
    const r = await convert(file, 'gzip')
    expect(r.error).toBeNull()
    expect(readdirSync(extract(r.result!.tarFile)).sort()).toEqual(['public', 'server.js'])
    expect(r.result!.files).toBe(3)
  })

  it("a GitHub-like zip (repo-main/ first) with a link inside becomes the folder's content", async () => {
    const file = pyZip([['repo-main/', '', 0o40755], ['repo-main/index.js', 'console.log(1)'], ['repo-main/bin/', ''], ['repo-main/bin/start', 'go', 0o100755], ['repo-main/entry.js', 'index.js', 0o120777]])
    const r = await convert(file, 'zip')
    expect(r.error).toBeNull()
    const out = extract(r.result!.tarFile)
    expect(readdirSync(out).sort()).toEqual(['bin', 'entry.js', 'index.js'])
    expect(readlinkSync(join(out, 'entry.js'))).toBe('index.js')
    expect(lstatSync(join(out, 'bin', 'start')).mode & 0o777).toBe(0o755)
    expect(r.result).toMatchObject({ files: 4, bytes: 16 })
  })
})

describe('toCheckedTar: hostile archives are refused, naming the member, and nothing is left', () => {
  it('a member climbing out with ".."', async () => {
    // GNU tar keeps "../evil" with -P (--absolute-names), run from a folder beside it
    const root = join(dir, `up${n++}`)
    mkdirSync(join(root, 'sub'), { recursive: true })
    writeFileSync(join(root, 'evil'), 'x')
    execFileSync('tar', ['-czPf', `${root}.tar.gz`, '-C', join(root, 'sub'), '../evil'])
    await expectRefused(`${root}.tar.gz`, 'gzip', UnsafeSourceError, 'member "../evil" climbs out with ".."')
    const crafted = await craftedTar([['ok.txt', 'file', 'ok'], ['../outside/evil', 'file', 'x']])
    const err = await expectRefused(crafted, 'gzip', UnsafeSourceError, 'member "../outside/evil" climbs out with ".."')
    expect((err as UnsafeSourceError).member).toBe('../outside/evil')
  })

  it('a ".." hidden in a GNU long name (an L header), and in a pax path', async () => {
    const long = `${'a/'.repeat(60)}${'../'.repeat(61)}etc/x`
    await expectRefused(await craftedTar([[long, 'file', 'x']]), 'gzip', UnsafeSourceError, 'climbs out with ".."')
    const root = join(dir, `pax${n++}`)
    mkdirSync(join(root, 'sub'), { recursive: true })
    writeFileSync(join(root, 'evil'), 'x')
    execFileSync('tar', ['--format=pax', '-czPf', `${root}.tgz`, '-C', join(root, 'sub'), '../evil'])
    await expectRefused(`${root}.tgz`, 'gzip', UnsafeSourceError, 'member "../evil" climbs out with ".."')
  })

  it('an absolute member (tar -P)', async () => {
    const root = join(dir, `abs${n++}`)
    mkdirSync(root)
    writeFileSync(join(root, 'f'), 'x')
    const out = `${root}.tar.gz`
    execFileSync('tar', ['-czPf', out, join(root, 'f')])
    await expectRefused(out, 'gzip', UnsafeSourceError, `member "${join(root, 'f')}" is an absolute path`)
  })

  it('a symbolic link to /etc, then a file through it; a file through a link inside the tree', async () => {
    const file = await craftedTar([['etc', 'symbolic link', '/etc'], ['etc/cron.d/evil', 'file', '* * * * * root sh']])
    await expectRefused(file, 'gzip', UnsafeSourceError, 'member "etc" is a symbolic link to the absolute path "/etc", outside the tree')
    const inside = await craftedTar([['sub', 'folder'], ['lib', 'symbolic link', 'sub'], ['lib/x', 'file', 'x']])
    await expectRefused(inside, 'gzip', UnsafeSourceError, 'member "lib/x" would be written through the symbolic link "lib"')
  })

  it('a symbolic link to /etc alone (GNU tar from a real link)', async () => {
    const file = gnuTar((root) => symlinkSync('/etc', join(root, 'etc')))
    await expectRefused(file, 'gzip', UnsafeSourceError, 'member "./etc" is a symbolic link to the absolute path "/etc", outside the tree')
  })

  it('a symbolic link to ../.., and one that leaves through another link', async () => {
    await expectRefused(gnuTar((root) => symlinkSync('../..', join(root, 'up'))), 'gzip', UnsafeSourceError, 'member "./up" is a symbolic link to "../..", which leads above the tree')
    const file = gnuTar((root) => {
      symlinkSync('.', join(root, 'here'))
      mkdirSync(join(root, 'sub'))
      symlinkSync('../here/..', join(root, 'sub', 'sneak'))
    })
    await expectRefused(file, 'gzip', UnsafeSourceError, 'member "./sub/sneak" is a symbolic link to "../here/..", which leads above the tree')
  })

  it('a device and a FIFO (GNU tar from real ones)', async () => {
    await expectRefused(gnuTar((root) => execFileSync('mknod', [join(root, 'null'), 'c', '1', '3'])), 'gzip', UnsafeSourceError, 'member "./null" is a device')
    await expectRefused(gnuTar((root) => execFileSync('mkfifo', [join(root, 'pipe')])), 'gzip', UnsafeSourceError, 'member "./pipe" is a FIFO')
  })

  it('a hard link to /etc/passwd, and to a name that is no earlier member', async () => {
    await expectRefused(await craftedTar([['passwd', 'hard link', '/etc/passwd']]), 'gzip', UnsafeSourceError, 'member "passwd" is a hard link to "/etc/passwd", which is an absolute path')
    await expectRefused(await craftedTar([['a', 'hard link', 'b'], ['b', 'file', 'x']]), 'gzip', UnsafeSourceError, 'member "a" is a hard link to "b", which is not an earlier file of the archive')
  })

  it('a zip with ../ names, an absolute name, and a symbolic link out (its unix mode)', async () => {
    await expectRefused(pyZip([['ok.txt', 'ok'], ['../../evil.sh', 'x']]), 'zip', UnsafeSourceError, 'member "../../evil.sh" climbs out with ".."')
    await expectRefused(pyZip([['/tmp/evil', 'x']]), 'zip', UnsafeSourceError, 'member "/tmp/evil" is an absolute path')
    await expectRefused(pyZip([['app/', ''], ['app/l', '../../../etc', 0o120777], ['app/x', 'y']]), 'zip', UnsafeSourceError, 'member "app/l" is a symbolic link to "../../../etc", which leads above the tree')
    await expectRefused(pyZip([['l', '/etc/passwd', 0o120777]]), 'zip', UnsafeSourceError, 'member "l" is a symbolic link to the absolute path "/etc/passwd"')
    await expectRefused(pyZip([['p', '', 0o10644]]), 'zip', UnsafeSourceError, 'member "p" is a FIFO')
  })

  it('a zip bomb: 60 MB of zeros in a 60 kB zip, refused from its directory before any expansion', async () => {
    const file = pyZip([['a.bin', { zeros: 30_000_000 }], ['b.bin', { zeros: 30_000_000 }]])
    expect(Bun.file(file).size).toBeLessThan(200_000)
    const err = (await expectRefused(file, 'zip', SourceTooLargeError, "more than the 1048576 bytes the site's disk has free")) as SourceTooLargeError
    expect(err.member).toBe('a.bin')
  })

  it('a zip bomb that lies about its sizes stops after the size it declared', async () => {
    const file = pyZip([['a.bin', { zeros: 30_000_000 }]], 1000)
    const started = performance.now()
    await expectRefused(file, 'zip', InvalidSourceError, 'it is not a zip, or it is damaged')
    expect(performance.now() - started).toBeLessThan(2000)
  })

  it('a tar.gz expanding past the disk, and an upload itself larger than the disk', async () => {
    const file = gnuTar((root) => {
      writeFileSync(join(root, 'small'), 'x')
      writeFileSync(join(root, 'big'), Buffer.alloc(3 << 20))
    })
    const err = (await expectRefused(file, 'gzip', SourceTooLargeError, "more than the 1048576 bytes the site's disk has free")) as SourceTooLargeError
    expect(err.limitBytes).toBe(1 << 20)
    expect(err.atLeastBytes).toBeGreaterThan(1 << 20)
    await expectRefused(file, 'gzip', SourceTooLargeError, 'more than the 1000 bytes the site\'s disk has free', { maxBytes: 1000, maxFiles: 10 })
  })

  it('a tar.gz bomb: a 500-byte upload whose header says 10 GB, refused at that header', async () => {
    const out = join(dir, `bomb${n++}.tar`)
    const handle = await open(out, 'w')
    const w = new TarWriter(handle)
    await w.header('zeros.bin', 'file', 0o644, 10_000_000_000)
    await w.data(Buffer.alloc(4096))
    await handle.close()
    writeFileSync(`${out}.gz`, gzipSync(readFileSync(out)))
    expect(Bun.file(`${out}.gz`).size).toBeLessThan(1000)
    const err = (await expectRefused(`${out}.gz`, 'gzip', SourceTooLargeError, 'at least 10000000000 bytes (at member "zeros.bin")')) as SourceTooLargeError
    expect(err.atLeastBytes).toBe(10_000_000_000)
  })

  it('too many files', async () => {
    const file = gnuTar((root) => {
      for (let i = 0; i < 30; i++) writeFileSync(join(root, `f${i}`), 'x')
    })
    await expectRefused(file, 'gzip', TooManyFilesError, 'more than 20 files and folders', { maxBytes: 1 << 20, maxFiles: 20 })
  })

  it('an upload that is not an archive', async () => {
    const junk = join(dir, 'junk')
    writeFileSync(junk, 'this is not gzip at all')
    await expectRefused(junk, 'gzip', InvalidSourceError, 'not a gzip-compressed tar')
    await expectRefused(junk, 'zip', InvalidSourceError, 'not a zip')
  })
})
