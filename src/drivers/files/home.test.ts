import { spawn } from 'bun'
import { execFileSync } from 'node:child_process'
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { FileError } from './errors'
import { SiteHome } from './home'

/** The operations of the files API on a real folder; Berth runs as root, like these tests. */
const OWNER = { uid: 1000, gid: 1000 }
let root: string
let homeDir: string
let home: SiteHome
const outside = () => join(root, 'outside')

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'berth-home-'))
  homeDir = join(root, 'home')
  mkdirSync(join(homeDir, 'public'), { recursive: true })
  mkdirSync(outside())
  writeFileSync(join(outside(), 'canary.txt'), 'canary')
  writeFileSync(join(homeDir, 'public', 'index.html'), 'old')
  home = SiteHome.open(homeDir, OWNER)
})
afterEach(() => {
  home.close()
  rmSync(root, { recursive: true, force: true })
})

const problem = async (fn: () => unknown) => {
  try {
    await fn()
  } catch (err) {
    if (err instanceof FileError) return err.problem
    throw err
  }
  return 'ok'
}

describe('write', () => {
  it('replaces a file atomically, keeps its mode, and gives it to the site user', () => {
    execFileSync('chmod', ['0755', join(homeDir, 'public', 'index.html')])
    const res = home.write('public/index.html', Buffer.from('<h1>new</h1>'))
    expect(res).toMatchObject({ name: 'index.html', path: 'public/index.html', type: 'file', size: 12, mode: '0755', created: false })
    const st = statSync(join(homeDir, 'public', 'index.html'))
    expect([st.uid, st.gid]).toEqual([1000, 1000])
    expect(readFileSync(join(homeDir, 'public', 'index.html'), 'utf8')).toBe('<h1>new</h1>')
    expect(readdirSync(join(homeDir, 'public'))).toEqual(['index.html'])
  })

  it('makes missing parents, owned by the site user, 0755; a new file is 0644', () => {
    const res = home.write('public/css/deep/site.css', Buffer.from('body{}'))
    expect(res).toMatchObject({ created: true, mode: '0644' })
    for (const dir of ['public/css', 'public/css/deep']) {
      const st = statSync(join(homeDir, dir))
      expect([st.uid, st.mode & 0o7777]).toEqual([1000, 0o755])
    }
  })

  it('refuses folders, symlinks and special files at the name, and symlinks on the way', async () => {
    symlinkSync(join(outside(), 'canary.txt'), join(homeDir, 'public', 'canary'))
    symlinkSync(outside(), join(homeDir, 'out'))
    execFileSync('mkfifo', [join(homeDir, 'fifo')])
    expect(await problem(() => home.write('public', Buffer.from('x')))).toBe('wrong_type')
    expect(await problem(() => home.write('public/canary', Buffer.from('x')))).toBe('bad_path')
    expect(await problem(() => home.write('out/canary.txt', Buffer.from('x')))).toBe('bad_path')
    expect(await problem(() => home.write('out/new.txt', Buffer.from('x')))).toBe('bad_path')
    expect(await problem(() => home.write('fifo', Buffer.from('x')))).toBe('wrong_type')
    expect(await problem(() => home.write('', Buffer.from('x')))).toBe('bad_path')
    expect(readFileSync(join(outside(), 'canary.txt'), 'utf8')).toBe('canary')
    expect(readdirSync(outside())).toEqual(['canary.txt'])
  })
})

describe('read', () => {
  it('returns text with its entry', () => {
    expect(home.read('public/index.html', 100)).toMatchObject({ content: 'old', size: 3, type: 'file' })
  })

  it('refuses what is too large, not UTF-8, or holds NUL', async () => {
    writeFileSync(join(homeDir, 'big.txt'), 'a'.repeat(101))
    writeFileSync(join(homeDir, 'bin'), Buffer.from([0x89, 0x50, 0x4e, 0x47]))
    writeFileSync(join(homeDir, 'nul.txt'), 'a\0b')
    expect(home.read('big.txt', 101).content.length).toBe(101)
    expect(await problem(() => home.read('big.txt', 100))).toBe('too_large')
    expect(await problem(() => home.read('bin', 100))).toBe('not_text')
    expect(await problem(() => home.read('nul.txt', 100))).toBe('not_text')
  })

  it('refuses a FIFO at once (no reader blocks) and a device node without opening it', async () => {
    execFileSync('mkfifo', [join(homeDir, 'fifo')])
    execFileSync('mknod', [join(homeDir, 'zero'), 'c', '1', '5'])
    const started = performance.now()
    expect(await problem(() => home.read('fifo', 100))).toBe('wrong_type')
    expect(await problem(() => home.read('zero', 100))).toBe('wrong_type')
    expect(await problem(() => home.read('public', 100))).toBe('wrong_type')
    expect(performance.now() - started).toBeLessThan(1000)
  })
})

describe('openForReading (the logs service)', () => {
  /** The content read, or the FileProblem raised. */
  const opened = async (path: string) => {
    try {
      const file = await home.openForReading(path)
      try {
        return `ok:${(await file.readFile()).toString('utf8')}`
      } finally {
        await file.close()
      }
    } catch (err) {
      if (!(err instanceof FileError)) throw err
      expect(err.message).not.toContain(root)
      return err.problem
    }
  }

  it.each([
    ['a regular file', 'logs/access.log', 'ok:hello\n'],
    ['a symlink to a host file', 'logs/error.log', 'bad_path'],
    ['a relative symlink inside the home', 'logs/relative.log', 'bad_path'],
    ['a file under a folder that is a symlink to a host folder', 'linked-logs/canary.txt', 'bad_path'],
    ['a file under a folder that is a file', 'logs/access.log/x', 'bad_path'],
    ['a folder', 'logs/folder.log', 'wrong_type'],
    ['a FIFO (would block a plain open)', 'logs/fifo.log', 'wrong_type'],
    ['a device node (its driver never runs)', 'logs/zero.log', 'wrong_type'],
    ['a unix socket (a plain open fails with ENXIO)', 'logs/socket.log', 'wrong_type'],
    ['a missing file', 'logs/php.log', 'not_found'],
    ['a file in a missing folder', 'nope/php.log', 'not_found'],
    ['a path with ..', 'logs/../logs/access.log', 'bad_path'],
    ['an absolute path', '/etc/passwd', 'bad_path'],
  ])('%s: %j → %s', async (_, path, expected) => {
    const logs = join(homeDir, 'logs')
    mkdirSync(join(logs, 'folder.log'), { recursive: true })
    writeFileSync(join(logs, 'access.log'), 'hello\n')
    symlinkSync(join(outside(), 'canary.txt'), join(logs, 'error.log'))
    symlinkSync('access.log', join(logs, 'relative.log'))
    execFileSync('mkfifo', [join(logs, 'fifo.log')])
    execFileSync('mknod', [join(logs, 'zero.log'), 'c', '1', '5'])
    const socket = Bun.listen({ unix: join(logs, 'socket.log'), socket: { data() {} } })
    symlinkSync(outside(), join(homeDir, 'linked-logs'))
    try {
      const started = performance.now()
      expect(await opened(path)).toBe(expected)
      expect(performance.now() - started).toBeLessThan(1000)
    } finally {
      socket.stop(true)
    }
  })
})

describe('list', () => {
  it('lists names sorted, symlinks as symlinks, special files as other', () => {
    symlinkSync('/etc/shadow', join(homeDir, 'public', 'shadow'))
    execFileSync('mkfifo', [join(homeDir, 'public', 'fifo')])
    mkdirSync(join(homeDir, 'public', 'img'))
    const { entries, truncated } = home.list('public', 100)
    expect(truncated).toBe(false)
    expect(entries.map((e) => [e.name, e.path, e.type])).toEqual([
      ['fifo', 'public/fifo', 'other'],
      ['img', 'public/img', 'dir'],
      ['index.html', 'public/index.html', 'file'],
      ['shadow', 'public/shadow', 'symlink'],
    ])
    expect(entries[2]!.mode).toMatch(/^0[0-7]{3}$/)
    expect(new Date(entries[2]!.modified_at).toISOString()).toBe(entries[2]!.modified_at)
  })

  it('caps the entries and says so', () => {
    for (let i = 0; i < 5; i++) writeFileSync(join(homeDir, `f${i}`), '')
    const res = home.list('', 3)
    expect(res.entries.map((e) => e.name)).toEqual(['f0', 'f1', 'f2'])
    expect(res.truncated).toBe(true)
  })
})

describe('mkdir', () => {
  it('makes parents, is idempotent, refuses a file in the way', async () => {
    expect(home.mkdir('a/b/c')).toMatchObject({ path: 'a/b/c', type: 'dir', created: true, mode: '0755' })
    expect(home.mkdir('a/b/c/')).toMatchObject({ created: false })
    expect(statSync(join(homeDir, 'a', 'b')).uid).toBe(1000)
    expect(await problem(() => home.mkdir('public/index.html'))).toBe('wrong_type')
    expect(await problem(() => home.mkdir('public/index.html/x'))).toBe('bad_path')
    expect(await problem(() => home.mkdir(''))).toBe('bad_path')
  })
})

describe('remove', () => {
  it('removes a tree, unlinking symlinks inside without following them', async () => {
    mkdirSync(join(homeDir, 'tree', 'a', 'b'), { recursive: true })
    writeFileSync(join(homeDir, 'tree', 'a', 'b', 'f'), 'x')
    symlinkSync(outside(), join(homeDir, 'tree', 'out'))
    symlinkSync(join(outside(), 'canary.txt'), join(homeDir, 'tree', 'a', 'canary'))
    execFileSync('mkfifo', [join(homeDir, 'tree', 'fifo')])
    expect(await home.remove('tree')).toEqual({ path: 'tree', type: 'dir', removed: 7 })
    expect(existsSync(join(homeDir, 'tree'))).toBe(false)
    expect(readdirSync(outside())).toEqual(['canary.txt'])
    expect(readFileSync(join(outside(), 'canary.txt'), 'utf8')).toBe('canary')
  })

  it('refuses the home itself, symlinks, special files and missing paths', async () => {
    symlinkSync(outside(), join(homeDir, 'out'))
    execFileSync('mknod', [join(homeDir, 'zero'), 'c', '1', '5'])
    expect(await problem(() => home.remove(''))).toBe('bad_path')
    expect(await problem(() => home.remove('.'))).toBe('bad_path')
    expect(await problem(() => home.remove('out'))).toBe('bad_path')
    expect(await problem(() => home.remove('out/canary.txt'))).toBe('bad_path')
    expect(await problem(() => home.remove('zero'))).toBe('wrong_type')
    expect(await problem(() => home.remove('nothing'))).toBe('not_found')
    expect(lstatSync(join(homeDir, 'out')).isSymbolicLink()).toBe(true)
    expect(await home.remove('public/index.html')).toEqual({ path: 'public/index.html', type: 'file', removed: 1 })
  })
})

describe('a tenant racing the API', () => {
  it('swapping a folder for a symlink to the outside in a tight loop never lets a write, read or delete through', async () => {
    // `public` flips between a real folder and a symlink to `outside`, by renames in a tight
    // loop in another process (microseconds apart, unlike a shell's mv and ln). A write can
    // make a new `public` while it is away (parents are created): the racer throws that away.
    symlinkSync(outside(), join(homeDir, 'link'))
    const flip = `const { renameSync: r, rmSync } = require('node:fs'); process.chdir(${JSON.stringify(homeDir)})
      const step = (a, b) => { for (;;) { try { return r(a, b) } catch { rmSync(b, { recursive: true, force: true }) } } }
      for (;;) { step('public', 'real'); step('link', 'public'); step('public', 'link'); step('real', 'public') }`
    const racer = spawn([process.execPath, '-e', flip], { stdout: 'ignore', stderr: 'pipe' })
    // Bun takes a moment to start: wait until the flipping is seen.
    const flipping = (path: string) => lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink()
    for (const deadline = Date.now() + 10_000; !flipping(join(homeDir, 'public')) && Date.now() < deadline; ) await Bun.sleep(1)
    const outcomes = new Map<string, number>()
    try {
      for (let i = 0, started = Date.now(); i < 1500 || Date.now() - started < 500; i++) {
        const op = i % 3
        const outcome = await problem(() =>
          op === 0 ? home.write('public/canary.txt', Buffer.from('pwned')) : op === 1 ? home.read('public/canary.txt', 100) : home.remove('public/canary.txt'),
        )
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
      }
    } finally {
      racer.kill()
      await racer.exited
    }
    expect(racer.exitCode, await new Response(racer.stderr).text()).not.toBe(1)
    expect(readFileSync(join(outside(), 'canary.txt'), 'utf8')).toBe('canary')
    expect(readdirSync(outside()).sort()).toEqual(['canary.txt'])
    // The race really happened: some operations went through, some met the symlink.
    expect(outcomes.get('bad_path') ?? 0).toBeGreaterThan(0)
    expect([...outcomes.keys()].every((k) => ['ok', 'bad_path', 'not_found', 'busy'].includes(k)), JSON.stringify([...outcomes])).toBe(true)
  })
})

describe('folder', () => {
  it('normalises a folder beneath the home; a missing one, a file, a link or an escape is refused', async () => {
    mkdirSync(join(homeDir, 'public', 'css'))
    symlinkSync(outside(), join(homeDir, 'public', 'out'))
    symlinkSync(join(homeDir, 'public', 'css'), join(homeDir, 'css-link'))
    expect(home.folder('')).toBe('')
    expect(home.folder('public//css/.')).toBe('public/css')
    expect(await problem(() => home.folder('public/nope'))).toBe('not_found')
    expect(await problem(() => home.folder('public/index.html'))).toBe('wrong_type')
    expect(await problem(() => home.folder('public/out'))).toBe('bad_path')
    expect(await problem(() => home.folder('css-link'))).toBe('bad_path')
    expect(await problem(() => home.folder('public/../..'))).toBe('bad_path')
    expect(await problem(() => home.folder('/etc'))).toBe('bad_path')
  })
})
