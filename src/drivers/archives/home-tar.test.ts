import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { scanTar, tarHome } from './home-tar'

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
