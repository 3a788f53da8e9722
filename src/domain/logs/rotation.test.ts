import { chownSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openSiteHome } from '../../drivers/files/home'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { PlansService } from '../plans/service'
import { LogRotation } from './rotation'
import { LogsService } from './service'
import { REOPEN_LOGS } from './sources'

/**
 * Issue 38, item 3, on real homes (folders and files on this box, owned by the site user): the
 * rotation by size, its bound on the files kept, and the logs API reading across the rotated
 * files. Only the volume's path, the container's exec (recorded) and the plan lookup are stand-ins;
 * src/domain/logs/rotation.service.test.ts rotates real site containers' logs under a writer.
 */
let root: string
const execs: { slug: string; cmd: string[] }[] = []
const runtime = {
  homePath: async (slug: string) => join(root, slug),
  exec: async (slug: string, cmd: string[]) => (execs.push({ slug, cmd }), { exitCode: 0, output: '' }),
} as unknown as ContainerRuntime
const plans = { get: () => ({ hosting_type: 'vps' }) } as unknown as PlansService

/** `n` numbered lines `<prefix> <i>` from `from`, each padded to about 100 bytes. */
const numbered = (prefix: string, from: number, n: number) => Array.from({ length: n }, (_, i) => `${prefix} ${from + i} ${'x'.repeat(80)}\n`).join('')

function site(slug: string, files: Record<string, string>): string {
  const logs = join(root, slug, 'logs')
  mkdirSync(logs, { recursive: true })
  for (const [name, text] of Object.entries(files)) {
    writeFileSync(join(logs, name), text)
    chownSync(join(logs, name), 1000, 1000)
  }
  return logs
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'berth-rotate-'))
})
afterAll(() => rmSync(root, { recursive: true, force: true }))

describe('LogRotation', () => {
  it('rotates every *.log at or over the size by renaming, keeps rotate_keep files, deletes older ones, and tells the servers to reopen', async () => {
    const logs = site('busy', { 'access.log': numbered('a', 0, 50), 'error.log': 'small\n', 'app.log': numbered('p', 0, 50), 'notes.txt': numbered('n', 0, 50) })
    const rotation = new LogRotation({ sites: { listLive: () => [{ slug: 'busy' }] }, runtime, openHome: openSiteHome, log: memoryLogger(), rotateBytes: 4096, keep: 2 })
    const before = lstatSync(join(logs, 'access.log')).ino

    expect(await rotation.rotateSite('busy')).toEqual(['logs/access.log', 'logs/app.log'])
    // Renamed, not copied: the very inode a writer holds open is now access.log.1.
    expect(lstatSync(join(logs, 'access.log.1')).ino).toBe(before)
    expect(readdirSync(logs).sort()).toEqual(['access.log.1', 'app.log.1', 'error.log', 'notes.txt'])
    expect(execs).toEqual([{ slug: 'busy', cmd: [...REOPEN_LOGS] }])

    // Three more rotations with keep 2: .1 and .2 stay, the oldest go.
    for (let round = 1; round <= 3; round++) {
      writeFileSync(join(logs, 'access.log'), numbered('a', round * 50, 50))
      chownSync(join(logs, 'access.log'), 1000, 1000)
      await rotation.rotateAll()
    }
    expect(readdirSync(logs).filter((n) => n.startsWith('access')).sort()).toEqual(['access.log.1', 'access.log.2'])
    expect(readFileSync(join(logs, 'access.log.1'), 'utf8')).toContain('a 150 ')
    expect(readFileSync(join(logs, 'access.log.2'), 'utf8')).toContain('a 100 ')
    // The rotated files still belong to the site's user (and count against its home).
    expect([lstatSync(join(logs, 'access.log.2')).uid, lstatSync(join(logs, 'access.log.2')).gid]).toEqual([1000, 1000])
  })

  it('leaves small logs alone and runs nothing in the container; a smaller keep deletes the files past it', async () => {
    const logs = site('quiet', { 'error.log': 'one line\n', 'access.log.1': 'a\n', 'access.log.2': 'b\n', 'access.log.3': 'c\n', 'access.log': numbered('a', 0, 50) })
    execs.length = 0
    const rotation = new LogRotation({ sites: { listLive: () => [{ slug: 'quiet' }] }, runtime, openHome: openSiteHome, log: memoryLogger(), rotateBytes: 1 << 20, keep: 1 })
    expect(await rotation.rotateSite('quiet')).toEqual([])
    expect(execs).toEqual([])
    const small = new LogRotation({ sites: { listLive: () => [] }, runtime, openHome: openSiteHome, log: memoryLogger(), rotateBytes: 4096, keep: 1 })
    expect(await small.rotateSite('quiet')).toEqual(['logs/access.log'])
    expect(readdirSync(logs).sort()).toEqual(['access.log.1', 'error.log'])
  })

  it('never follows a symlink the tenant planted: a linked log is not rotated, a link at NAME.N is moved as a link', async () => {
    const secret = join(root, 'host-secret')
    writeFileSync(secret, 'root:x:0:0\n'.repeat(1000))
    const logs = site('planted', {})
    symlinkSync(secret, join(logs, 'error.log'))
    writeFileSync(join(logs, 'access.log'), numbered('a', 0, 50))
    symlinkSync(secret, join(logs, 'access.log.1'))
    const rotation = new LogRotation({ sites: { listLive: () => [] }, runtime, openHome: openSiteHome, log: memoryLogger(), rotateBytes: 4096, keep: 3 })
    expect(await rotation.rotateSite('planted')).toEqual(['logs/access.log'])
    expect(lstatSync(join(logs, 'error.log')).isSymbolicLink()).toBe(true)
    expect(lstatSync(join(logs, 'access.log.2')).isSymbolicLink()).toBe(true)
    expect(readFileSync(secret, 'utf8')).toBe('root:x:0:0\n'.repeat(1000))
  })

  it('a folder the site made at NAME.N holds that log back (logged), not the others', async () => {
    const logs = site('blocked', { 'access.log': numbered('a', 0, 50), 'error.log': numbered('e', 0, 50) })
    mkdirSync(join(logs, 'access.log.1'))
    writeFileSync(join(logs, 'access.log.1', 'mine'), 'x')
    const lines: Record<string, unknown>[] = []
    const rotation = new LogRotation({ sites: { listLive: () => [] }, runtime, openHome: openSiteHome, log: memoryLogger(lines), rotateBytes: 4096, keep: 1 })
    expect(await rotation.rotateSite('blocked')).toEqual(['logs/error.log'])
    expect(readdirSync(logs).sort()).toEqual(['access.log', 'access.log.1', 'error.log.1'])
    expect(lines).toEqual([expect.objectContaining({ msg: "could not rotate a site's logs", site: 'blocked', file: 'logs/access.log' })])
  })

  it('a site without a logs folder or a home is skipped', async () => {
    mkdirSync(join(root, 'bare'))
    const rotation = new LogRotation({ sites: { listLive: () => [{ slug: 'bare' }, { slug: 'gone' }] }, runtime, openHome: openSiteHome, log: memoryLogger(), rotateBytes: 4096, keep: 3 })
    await rotation.rotateAll()
    expect(await rotation.rotateSite('gone')).toEqual([])
  })
})

describe('the logs API reads across the rotated files', () => {
  const logs = new LogsService(plans, runtime, openSiteHome, undefined, undefined, 5)
  const read = (slug: string, q: { lines?: number; search?: string; type?: 'access' | 'error' }) => logs.read({ slug, planSlug: 'business' } as SiteRow, { type: q.type ?? 'access', ...q })
  const seqs = (lines: string[]) => lines.map((l) => Number(l.split(' ')[1]))

  beforeAll(() => {
    // access.log.2 holds 0-99, .1 100-199, the current file 200-229.
    site('rotated', { 'access.log.2': numbered('a', 0, 100), 'access.log.1': numbered('a', 100, 100), 'access.log': numbered('a', 200, 30) })
    site('rotated-no-current', { 'access.log.1': numbered('a', 0, 10) })
    site('linked-rotated', { 'access.log': numbered('a', 200, 30), 'access.log.2': numbered('a', 0, 100) })
    symlinkSync(join(root, 'rotated', 'logs', 'access.log.1'), join(root, 'linked-rotated', 'logs', 'access.log.1'))
  })

  it('lines: the newest from the current file, then from .1, .2, oldest first in the answer', async () => {
    expect(seqs((await read('rotated', { lines: 10 })).lines)).toEqual([220, 221, 222, 223, 224, 225, 226, 227, 228, 229])
    const many = (await read('rotated', { lines: 150 })).lines
    expect(seqs(many)).toEqual(Array.from({ length: 150 }, (_, i) => 80 + i))
    expect(seqs((await read('rotated', { lines: 1000 })).lines)).toEqual(Array.from({ length: 230 }, (_, i) => i))
    expect((await read('rotated', { lines: 5 })).file).toBe('logs/access.log')
  })

  it('search: finds lines in the rotated files too, newest kept', async () => {
    expect(seqs((await read('rotated', { search: 'a 5' })).lines)).toEqual([5, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59])
    expect(seqs((await read('rotated', { search: 'a 15', lines: 3 })).lines)).toEqual([157, 158, 159])
    expect((await read('rotated', { search: 'nowhere' })).lines).toEqual([])
  })

  it('reads the rotated files when the current one is not there yet (just rotated, server not reopened)', async () => {
    expect(seqs((await read('rotated-no-current', { lines: 3 })).lines)).toEqual([7, 8, 9])
  })

  it('a log read with no rotated file is not looked at again until the rotation tells the service', async () => {
    const dir = site('later', { 'access.log': numbered('a', 0, 50) })
    expect(seqs((await read('later', { lines: 100 })).lines)).toHaveLength(50)
    const rotation = new LogRotation({ sites: { listLive: () => [{ slug: 'later' }] }, runtime, openHome: openSiteHome, log: memoryLogger(), rotateBytes: 4096, keep: 5, onRotated: (slug) => logs.rotatedLogs(slug) })
    await rotation.rotateAll()
    writeFileSync(join(dir, 'access.log'), numbered('a', 50, 5))
    expect(seqs((await read('later', { lines: 100 })).lines)).toEqual(Array.from({ length: 55 }, (_, i) => i))
  })

  it('stops at a rotated file that is not a regular file (a planted link), never following it', async () => {
    expect(seqs((await read('linked-rotated', { lines: 100 })).lines)).toEqual(Array.from({ length: 30 }, (_, i) => 200 + i))
  })
})
