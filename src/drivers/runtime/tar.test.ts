import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { makeTar } from './tar'

// Checked against GNU tar, the reader that matters after Docker itself.
describe('makeTar', () => {
  let dir = ''
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'berth-tar-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('writes files, directories and symlinks that GNU tar extracts with their modes and owners', async () => {
    const long = `${'deep/'.repeat(25)}file.txt`
    const archive = makeTar([
      { type: 'dir', path: 'home/site', mode: 0o750, uid: 1000, gid: 1000 },
      { type: 'file', path: 'home/site/index.html', data: 'héllo\n', mode: 0o640, uid: 1000, gid: 1000 },
      { type: 'file', path: 'bin/tool', data: new Uint8Array(1500).fill(7), mode: 0o755 },
      { type: 'symlink', path: 'bin/sh', target: '/bin/tool' },
      { type: 'file', path: long, data: 'x' },
    ])
    expect(archive.length % 512).toBe(0)
    writeFileSync(join(dir, 'a.tar'), archive)
    const list = Bun.spawnSync(['tar', '--numeric-owner', '-tvf', join(dir, 'a.tar')]).stdout.toString()
    expect(list).toMatch(/drwxr-x--- 1000\/1000 .* home\/site\//)
    expect(list).toMatch(/-rw-r----- 1000\/1000 +7 .* home\/site\/index.html/)
    expect(list).toMatch(/lrwxrwxrwx 0\/0 .* bin\/sh -> \/bin\/tool/)
    const out = join(dir, 'out')
    Bun.spawnSync(['mkdir', out])
    const x = Bun.spawnSync(['tar', '-xf', join(dir, 'a.tar'), '-C', out])
    expect(x.exitCode).toBe(0)
    expect(readFileSync(join(out, 'home/site/index.html'), 'utf8')).toBe('héllo\n')
    expect(statSync(join(out, 'bin/tool')).size).toBe(1500)
    expect(statSync(join(out, 'bin/tool')).mode & 0o777).toBe(0o755)
    expect(readlinkSync(join(out, 'bin/sh'))).toBe('/bin/tool')
    expect(readFileSync(join(out, long), 'utf8')).toBe('x')
  })

  it('gives the same bytes for the same entries (build contexts are hashed)', () => {
    const entries = [{ type: 'file' as const, path: 'Dockerfile', data: 'FROM scratch\n' }]
    expect(Buffer.from(makeTar(entries)).equals(Buffer.from(makeTar(entries)))).toBe(true)
  })
})
