import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { createPrivateFile, filesIn, tightenPrivateFiles, writePrivateFile } from './private-file'

const dir = () => mkdtempSync(join(tmpdir(), 'berth-private-'))
const modeOf = (file: string) => (statSync(file).mode & 0o7777).toString(8)

describe('private files', () => {
  it('writePrivateFile makes a 0600 file, and puts a widened leftover temporary file back to 0600', () => {
    const d = dir()
    const file = join(d, 'account.key')
    // A temporary file of the same name left by a crash, widened meanwhile.
    writeFileSync(`${file}.${process.pid}.tmp`, 'old')
    chmodSync(`${file}.${process.pid}.tmp`, 0o644)
    writePrivateFile(file, 'secret')
    expect(readFileSync(file, 'utf8')).toBe('secret')
    expect(modeOf(file)).toBe('600')
  })

  it('createPrivateFile makes a missing file 0600 and leaves an existing one as it is', () => {
    const d = dir()
    createPrivateFile(join(d, 'new.db'))
    expect(modeOf(join(d, 'new.db'))).toBe('600')
    writeFileSync(join(d, 'old.db'), 'kept')
    chmodSync(join(d, 'old.db'), 0o640)
    createPrivateFile(join(d, 'old.db'))
    expect(readFileSync(join(d, 'old.db'), 'utf8')).toBe('kept')
    expect(modeOf(join(d, 'old.db'))).toBe('640')
  })

  it('tightenPrivateFiles sets every file open to others back to 0600 and says which, skipping missing ones', () => {
    const d = dir()
    const files = { wide: join(d, 'berth.db'), group: join(d, 'berth.db-wal'), tight: join(d, 'account.key'), missing: join(d, 'berth.db-shm') }
    for (const f of [files.wide, files.group, files.tight]) writeFileSync(f, 'x')
    chmodSync(files.wide, 0o644)
    chmodSync(files.group, 0o660)
    chmodSync(files.tight, 0o600)
    expect(tightenPrivateFiles(Object.values(files))).toEqual([
      { file: files.wide, was: '0644', fixed: true },
      { file: files.group, was: '0660', fixed: true },
    ])
    for (const f of [files.wide, files.group, files.tight]) expect(modeOf(f)).toBe('600')
    expect(tightenPrivateFiles(Object.values(files))).toEqual([])
  })

  it('filesIn lists the regular files of a folder, and nothing for a missing one', () => {
    const d = dir()
    writeFileSync(join(d, 'a.key'), '')
    createPrivateFile(join(d, 'b.crt'))
    expect(filesIn(d).sort()).toEqual([join(d, 'a.key'), join(d, 'b.crt')])
    expect(filesIn(join(d, 'nothing'))).toEqual([])
  })
})
