import { spawn } from 'bun'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DataFolderLockedError, lockDataFolder } from './data-lock'

/**
 * The data folder's lock between real processes: a second taker is refused with the holder's
 * pid and command, and the lock goes with its holder however it ends (kill -9 included).
 */
const dir = mkdtempSync(join(tmpdir(), 'berth-lock-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Another process holding the lock as `command` until killed; resolves once it holds it. */
async function holder(command: string) {
  const script = `import { lockDataFolder } from ${JSON.stringify(join(import.meta.dirname, 'data-lock.ts'))}; lockDataFolder(${JSON.stringify(dir)}, ${JSON.stringify(command)}); console.log('held'); setInterval(() => {}, 1000)`
  const proc = spawn(['bun', '-e', script], { stdout: 'pipe', stderr: 'pipe' })
  const reader = proc.stdout.getReader()
  const first = await reader.read()
  expect(new TextDecoder().decode(first.value)).toContain('held')
  return proc
}

describe('lockDataFolder', () => {
  it('refuses a second process while one holds it, naming the holder; free again once the holder is killed -9', async () => {
    const first = await holder('berth restore')
    try {
      let refused: unknown
      try {
        lockDataFolder(dir, 'berth migrate')
      } catch (err) {
        refused = err
      }
      expect(refused).toBeInstanceOf(DataFolderLockedError)
      expect((refused as DataFolderLockedError).holder).toBe(`pid ${first.pid}: berth restore`)
    } finally {
      first.kill('SIGKILL')
      await first.exited
    }
    const mine = lockDataFolder(dir, 'berth migrate')
    expect(readFileSync(join(dir, 'berth.lock'), 'utf8')).toBe(`pid ${process.pid}: berth migrate\n`)
    mine.release()
    // Released: another process takes it.
    const again = await holder('berth serve')
    again.kill('SIGKILL')
    await again.exited
  })
})
