import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'


/** Opens a store in a child process whose umask is `umask`, writes a row and keeps it open; returns the modes seen. */
function modesUnder(umask: string): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), 'berth-store-mode-'))
  const db = join(dir, 'berth.db')
  const script = `
    const { openStore } = await import(${JSON.stringify(join(import.meta.dirname, 'store.ts'))})
    const store = openStore(${JSON.stringify(db)})
    store.write(() => store.sqlite.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)'))
    const { statSync } = await import('node:fs')
    const mode = (f) => (statSync(f).mode & 0o777).toString(8)
    console.log(JSON.stringify({ db: mode(${JSON.stringify(db)}), wal: mode(${JSON.stringify(db + '-wal')}), shm: mode(${JSON.stringify(db + '-shm')}) }))
    store.close()`
  const p = Bun.spawnSync(['sh', '-c', `umask ${umask} && exec "$0" -e "$1"`, process.execPath, script], { stdout: 'pipe', stderr: 'pipe' })
  if (p.exitCode !== 0) throw new Error(p.stderr.toString())
  return JSON.parse(p.stdout.toString())
}

describe('the store file and its WAL and shared memory are private', () => {
  it.each(['000', '022', '077'])('0600 under umask %s, as SQLite opens and writes them', (umask) => {
    expect(modesUnder(umask)).toMatchObject({ db: '600', wal: '600', shm: '600' })
  })
})
