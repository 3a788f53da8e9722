import { dlopen, FFIType, read, type Pointer } from 'bun:ffi'
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/**
 * The exclusive lock on a data folder: flock(2) on DATA_DIR/berth.lock, taken by `berth serve`
 * for its lifetime and by the commands that work on the data folder without it (`berth restore`,
 * `berth migrate`, `berth install`, and the read-only admin commands when no server runs). Bun
 * has no flock: it comes from glibc through bun:ffi, as drivers/files/syscalls.ts does openat2.
 * The kernel drops the lock when the process ends, however it ends (kill -9 included), so a
 * stale lock file never blocks anyone. The holder writes its pid and command line into the file:
 * a refused caller names who holds it.
 */

const LOCK_EX = 2
const LOCK_NB = 4
const EWOULDBLOCK = 11

export const LOCK_FILE = 'berth.lock'

/** The data folder is locked by another process; `holder` is what it wrote ("pid 123: berth serve"), or null. */
export class DataFolderLockedError extends Error {
  constructor(readonly path: string, readonly holder: string | null) {
    super(`${path} is held by ${holder ?? 'another process (it wrote no pid)'}`)
  }
}

export interface DataFolderLock {
  readonly path: string
  release(): void
}

/** Takes the lock without waiting; throws DataFolderLockedError when another process holds it. */
export function lockDataFolder(dataDir: string, command: string): DataFolderLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o750 })
  const path = join(dataDir, LOCK_FILE)
  // node:fs opens with O_CLOEXEC: the containers and tools this process starts do not inherit the lock.
  const fd = openSync(path, 'a+', 0o600)
  const libc = dlopen('libc.so.6', { flock: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 }, __errno_location: { args: [], returns: FFIType.ptr } })
  try {
    if (libc.symbols.flock(fd, LOCK_EX | LOCK_NB) !== 0) {
      const errno = errnoOf(libc.symbols.__errno_location() as Pointer | null)
      closeSync(fd)
      if (errno === EWOULDBLOCK) throw new DataFolderLockedError(path, holderOf(path))
      throw new Error(`flock(${path}) failed with errno ${errno}`)
    }
  } finally {
    libc.close()
  }
  ftruncateSync(fd, 0)
  writeSync(fd, `pid ${process.pid}: ${command}\n`)
  let released = false
  return {
    path,
    release() {
      if (released) return
      released = true
      // Emptied first: a reader between the two sees no holder rather than a stale one.
      ftruncateSync(fd, 0)
      closeSync(fd)
    },
  }
}

function holderOf(path: string): string | null {
  try {
    return readFileSync(path, 'utf8').trim() || null
  } catch {
    return null
  }
}

function errnoOf(pointer: Pointer | null): number {
  return pointer === null ? 0 : read.i32(pointer, 0)
}
