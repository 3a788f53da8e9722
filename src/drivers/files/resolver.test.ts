import { execFileSync } from 'node:child_process'
import { closeSync, fstatSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, symlinkSync, writeFileSync, constants } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FileError, type FileProblem } from './errors'
import { parsePath } from './path'
import { openSubfolder, resolve } from './resolver'
import { O_PATH } from './syscalls'

/**
 * The resolver against real files: a home folder full of traps (symlinks out of it, to /etc,
 * /proc/1/root, a FIFO, a device node) beside a folder standing for "outside". Every path either
 * opens exactly the expected file beneath the home, or is refused with the expected problem.
 */
let root: string
let home: string
let homeFd: number
const outside = () => join(root, 'outside')

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'berth-resolver-'))
  home = join(root, 'home')
  mkdirSync(join(home, 'public', 'sub'), { recursive: true })
  mkdirSync(outside())
  writeFileSync(join(outside(), 'canary.txt'), 'canary')
  writeFileSync(join(home, 'public', 'index.html'), '<h1>hi</h1>')
  writeFileSync(join(home, 'public', 'sub', 'deep.txt'), 'deep')
  writeFileSync(join(home, 'file.txt'), 'file')
  writeFileSync(join(home, '...'), 'three dots is a name')
  writeFileSync(join(home, '100%.txt'), 'a literal percent')
  writeFileSync(join(home, 'café.txt'), 'unicode name')
  mkdirSync(join(home, '.hidden'))
  symlinkSync('/etc', join(home, 'etc-link'))
  symlinkSync('/etc/shadow', join(home, 'public', 'shadow'))
  symlinkSync('/proc/1/root', join(home, 'proc-root'))
  symlinkSync('/', join(home, 'root-link'))
  symlinkSync('../outside', join(home, 'up'))
  symlinkSync(join(outside(), 'canary.txt'), join(home, 'public', 'canary'))
  symlinkSync('.', join(home, 'self'))
  symlinkSync('index.html', join(home, 'public', 'inner-link'))
  symlinkSync('/proc/self/fd/0', join(home, 'magic'))
  execFileSync('mkfifo', [join(home, 'public', 'fifo')])
  execFileSync('mknod', [join(home, 'zero'), 'c', '1', '5'])
  homeFd = openSync(home, constants.O_RDONLY | constants.O_DIRECTORY)
})
afterAll(() => {
  closeSync(homeFd)
  rmSync(root, { recursive: true, force: true })
})

type Case = [path: string, expected: string | FileProblem]
const OK = (relative: string) => `ok:${relative}`

/** Path → `ok:<file it must open, relative to the home>` or the FileProblem it must raise. */
const TABLE: Case[] = [
  // Plain paths and the normalisations the rules allow.
  ['', OK('.')],
  ['.', OK('.')],
  ['./', OK('.')],
  ['public', OK('public')],
  ['public/', OK('public')],
  ['public//index.html', OK('public/index.html')],
  ['./public/./index.html', OK('public/index.html')],
  ['public/sub/deep.txt', OK('public/sub/deep.txt')],
  ['...', OK('...')],
  ['100%.txt', OK('100%.txt')],
  ['café.txt', OK('café.txt')],
  ['.hidden', OK('.hidden')],
  // Special files open as O_PATH handles (the operations then refuse them by type).
  ['public/fifo', OK('public/fifo')],
  ['zero', OK('zero')],
  // Missing.
  ['missing.txt', 'not_found'],
  ['public/missing/x', 'not_found'],
  // A file in the middle.
  ['file.txt/x', 'bad_path'],
  // `..` in any position, even one that would stay inside.
  ['..', 'bad_path'],
  ['../', 'bad_path'],
  ['../outside/canary.txt', 'bad_path'],
  ['public/../file.txt', 'bad_path'],
  ['public/sub/../../..', 'bad_path'],
  ['./../x', 'bad_path'],
  // Absolute.
  ['/', 'bad_path'],
  ['/etc/passwd', 'bad_path'],
  ['//etc/passwd', 'bad_path'],
  // Control characters, NUL, backslashes.
  ['public/index.html\0.txt', 'bad_path'],
  ['\0', 'bad_path'],
  ['public/\n../x', 'bad_path'],
  ['a\tb', 'bad_path'],
  ['\u001b[31m', 'bad_path'],
  ['\u0085', 'bad_path'],
  ['..\\..\\etc\\passwd', 'bad_path'],
  ['public\\index.html', 'bad_path'],
  // Percent-encoding, single and double.
  ['%2e%2e/outside/canary.txt', 'bad_path'],
  ['%2E%2E%2Fetc', 'bad_path'],
  ['..%2f..%2fetc%2fpasswd', 'bad_path'],
  ['%252e%252e%252f', 'bad_path'],
  ['public%2findex.html', 'bad_path'],
  ['%00', 'bad_path'],
  // Length.
  ['a'.repeat(4097), 'bad_path'],
  ['é'.repeat(2049), 'bad_path'],
  ['n'.repeat(256), 'bad_path'],
  // Unicode look-alikes of . / \
  ['\uff0e\uff0e/outside', 'bad_path'],
  ['\u2024\u2024/outside', 'bad_path'],
  ['\u2025/outside', 'bad_path'],
  ['\ufe52\ufe52/x', 'bad_path'],
  ['..\u2215outside', 'bad_path'],
  ['public\uff0findex.html', 'bad_path'],
  ['public\u2044index.html', 'bad_path'],
  ['public\uff3cindex.html', 'bad_path'],
  ['public\u2216index.html', 'bad_path'],
  ['\ud800', 'bad_path'],
  ['~/public', 'bad_path'],
  // Symlinks anywhere in the path, whatever they point at.
  ['etc-link', 'bad_path'],
  ['etc-link/passwd', 'bad_path'],
  ['public/shadow', 'bad_path'],
  ['proc-root', 'bad_path'],
  ['proc-root/etc/hostname', 'bad_path'],
  ['root-link/etc/shadow', 'bad_path'],
  ['up/canary.txt', 'bad_path'],
  ['public/canary', 'bad_path'],
  ['self/file.txt', 'bad_path'],
  ['public/inner-link', 'bad_path'],
  ['magic', 'bad_path'],
]

describe('parsePath and resolve', () => {
  it.each(TABLE)('%j → %s', (path, expected) => {
    let outcome: string
    try {
      const { fd } = resolve(homeFd, path, O_PATH)
      try {
        const st = fstatSync(fd)
        const want = expected.startsWith('ok:') ? statSync(join(home, expected.slice(3)), { throwIfNoEntry: false }) : undefined
        outcome = want && want.ino === st.ino && want.dev === st.dev ? expected : `opened inode ${st.ino}`
      } finally {
        closeSync(fd)
      }
    } catch (err) {
      if (!(err instanceof FileError)) throw err
      outcome = err.problem
      expect(err.message).not.toContain(root)
    }
    expect(outcome).toBe(expected)
  })

  it('has at least 60 cases', () => expect(TABLE.length).toBeGreaterThanOrEqual(60))

  it('splits and normalises what it accepts', () => {
    expect(parsePath('public//css/./site.css/')).toEqual(['public', 'css', 'site.css'])
    expect(parsePath('')).toEqual([])
    expect(parsePath('a'.repeat(255))).toEqual(['a'.repeat(255)])
  })

  it('says why, in words the caller can act on', () => {
    const why = (path: string) => {
      try {
        parsePath(path)
      } catch (err) {
        return (err as Error).message
      }
      return 'accepted'
    }
    expect(why('%2e%2e')).toMatch(/decoded paths/)
    expect(why('/etc')).toMatch(/relative to the site's home/)
    expect(why('a/../b')).toMatch(/'\.\.'/)
    expect(why('\uff0e')).toMatch(/U\+FF0E/)
    expect(() => resolve(homeFd, 'etc-link/passwd', O_PATH)).toThrow(/symbolic link/)
  })
})

describe('openSubfolder (tree walks: disk usage)', () => {
  it.each([
    ['a folder', 'public', true],
    ['a hidden folder', '.hidden', true],
    ['a symlink to a host folder', 'etc-link', false],
    ['a symlink to a folder inside', 'self', false],
    ['a symlink to /proc/1/root', 'proc-root', false],
    ['a file', 'file.txt', false],
    ['a FIFO', 'public/fifo', false],
    ['a name that is gone', 'missing', false],
  ])('%s (%s): opened %s', (_, name, opens) => {
    const parts = name.split('/')
    const parent = parts.length > 1 ? resolve(homeFd, parts[0]!, O_PATH).fd : homeFd
    try {
      const fd = openSubfolder(parent, parts.at(-1)!)
      if (fd !== null) {
        expect(fstatSync(fd).ino).toBe(statSync(join(home, name)).ino)
        closeSync(fd)
      }
      expect(fd !== null).toBe(opens)
    } finally {
      if (parent !== homeFd) closeSync(parent)
    }
  })

  it('takes a raw name that is not UTF-8', () => {
    const raw = Buffer.from([0x63, 0x61, 0x66, 0xe9])
    mkdirSync(Buffer.concat([Buffer.from(`${home}/`), raw]))
    const fd = openSubfolder(homeFd, raw)
    expect(fd).not.toBeNull()
    closeSync(fd!)
  })
})
