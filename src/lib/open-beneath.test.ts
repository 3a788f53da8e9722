import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NotRegularError, openFileBeneath } from './open-beneath'

/** Real files: a home with a log, and the symlinks a tenant could plant instead. */
let dir: string
let home: string
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'beneath-'))
  home = join(dir, 'home')
  mkdirSync(join(home, 'logs'), { recursive: true })
  writeFileSync(join(home, 'logs', 'access.log'), 'hello\n')
  writeFileSync(join(dir, 'host-secret'), 'secret\n')
  symlinkSync(join(dir, 'host-secret'), join(home, 'logs', 'error.log'))
  symlinkSync('access.log', join(home, 'logs', 'relative.log'))
  mkdirSync(join(home, 'logs', 'folder.log'))
  Bun.spawnSync(['mkfifo', join(home, 'logs', 'fifo.log')])
  // A home whose logs folder is a symlink to a host folder.
  mkdirSync(join(dir, 'home2'))
  symlinkSync(dir, join(dir, 'home2', 'logs'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('openFileBeneath', () => {
  it('opens a regular file', async () => {
    const f = await openFileBeneath(home, ['logs'], 'access.log')
    expect(f).not.toBeNull()
    expect((await f!.readFile()).toString()).toBe('hello\n')
    await f!.close()
  })

  it.each([
    ['a symlink to a host file', 'home', 'error.log'],
    ['a relative symlink inside the home', 'home', 'relative.log'],
    ['a folder', 'home', 'folder.log'],
    ['a FIFO (would block a plain open)', 'home', 'fifo.log'],
    ['a file under a logs folder that is a symlink', 'home2', 'host-secret'],
  ])('refuses %s', async (_, root, name) => {
    await expect(openFileBeneath(join(dir, root), ['logs'], name)).rejects.toBeInstanceOf(NotRegularError)
  })

  it('answers null for a missing file or folder', async () => {
    expect(await openFileBeneath(home, ['logs'], 'php.log')).toBeNull()
    expect(await openFileBeneath(home, ['nope'], 'php.log')).toBeNull()
  })

  it('refuses names that are not one component', async () => {
    await expect(openFileBeneath(home, ['..'], 'x')).rejects.toThrow(/single path component/)
    await expect(openFileBeneath(home, ['logs'], '../x')).rejects.toThrow(/single path component/)
  })
})
