import { existsSync, linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { replaceHome, scanTar, tarHome } from './home-tar'

const dir = mkdtempSync(join(tmpdir(), 'berth-tar-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('scanTar', () => {
  it('counts regular files and hard links, not folders, symlinks, GNU long-name entries or the left-out logs', async () => {
    const home = join(dir, 'home')
    const deep = join(home, 'a'.repeat(90), 'b'.repeat(90))
    mkdirSync(deep, { recursive: true })
    mkdirSync(join(home, 'logs'))
    writeFileSync(join(home, 'logs', 'access.log'), 'x'.repeat(5000))
    writeFileSync(join(deep, `${'c'.repeat(120)}.txt`), 'y'.repeat(1500))
    writeFileSync(join(home, 'small'), 'z')
    writeFileSync(join(home, 'empty'), '')
    linkSync(join(home, 'small'), join(home, 'hard'))
    symlinkSync('small', join(home, 'soft'))
    const tar = join(dir, 'home.tar')
    await tarHome(home, tar)
    expect(await scanTar(tar)).toEqual({ files: 4, bytes: 1501 })
  })
})

describe('keep', () => {
  it('leaves the kept names out of the tar, and a replace keeps them as they are while every other file is swapped', async () => {
    const home = join(dir, 'kept-home')
    mkdirSync(join(home, '.ssh'), { recursive: true })
    mkdirSync(join(home, 'public'))
    mkdirSync(join(home, 'logs'))
    writeFileSync(join(home, '.ssh', 'authorized_keys'), 'old key')
    writeFileSync(join(home, 'public', 'index.html'), 'recorded')
    const tar = join(dir, 'kept.tar')
    await tarHome(home, tar, ['.ssh'])
    expect(await scanTar(tar)).toEqual({ files: 1, bytes: 8 })

    writeFileSync(join(home, '.ssh', 'authorized_keys'), 'new key')
    writeFileSync(join(home, 'public', 'index.html'), 'changed')
    writeFileSync(join(home, 'public', 'added.html'), 'added')
    writeFileSync(join(home, 'logs', 'error.log'), 'kept log')
    await replaceHome(home, tar, ['.ssh'])
    expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('recorded')
    expect(existsSync(join(home, 'public', 'added.html'))).toBe(false)
    expect(readFileSync(join(home, '.ssh', 'authorized_keys'), 'utf8')).toBe('new key')
    expect(readFileSync(join(home, 'logs', 'error.log'), 'utf8')).toBe('kept log')
    expect(readdirSync(home).sort()).toEqual(['.ssh', 'logs', 'public'])
  })
})
