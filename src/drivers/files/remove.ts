import { closeSync, readdirSync } from 'node:fs'
import { FileError } from './errors'
import { asFileError, display, RESOLVE } from './resolver'
import { AT_REMOVEDIR, Errno, fdPath, O_CLOEXEC, O_DIRECTORY, O_PATH, openat2, SyscallError, unlinkat } from './syscalls'

/**
 * Deepest folder nesting removeTree goes into. Each level holds one fd open; 256 levels is far
 * past any real site and far below the process's fd limit.
 */
export const MAX_DEPTH = 256

/** Entries removed between two yields to the event loop, so a big tree does not stall the API. */
const BATCH = 500

/**
 * Empties the folder behind `dirfd` (an fd opened beneath a site's home), depth first, and
 * returns how many entries it removed. Only *at() calls relative to fds are used: each entry is
 * unlinked by name inside the folder we hold, so a symlink is removed and never followed, and a
 * folder the tenant renames or swaps meanwhile is either removed where it now is (still inside
 * the home) or left alone. Names are kept as raw bytes (they need not be UTF-8).
 */
export async function removeTree(dirfd: number, names: string[]): Promise<number> {
  const state = { removed: 0, sinceYield: 0 }
  await empty(dirfd, names, 0, state)
  return state.removed
}

async function empty(dirfd: number, names: string[], depth: number, state: { removed: number; sinceYield: number }): Promise<void> {
  if (depth >= MAX_DEPTH) {
    throw new FileError('bad_path', `'${display(names)}' nests folders more than ${MAX_DEPTH} deep; delete its deepest part from the site's shell first.`)
  }
  for (const name of readdirSync(fdPath(dirfd), { encoding: 'buffer' }) as Buffer[]) {
    if (++state.sinceYield >= BATCH) {
      state.sinceYield = 0
      await new Promise((done) => setImmediate(done))
    }
    try {
      unlinkat(dirfd, name, 0)
    } catch (err) {
      if (!(err instanceof SyscallError)) throw err
      if (err.errno === Errno.ENOENT) continue
      // unlink(2) of a folder is EISDIR on Linux: empty it, then remove it.
      if (err.errno !== Errno.EISDIR) throw asFileError(err, names)
      let child: number
      try {
        child = openat2(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE)
      } catch (openErr) {
        // Swapped for a symlink or a file since: unlink what is there now.
        if (openErr instanceof SyscallError && (openErr.errno === Errno.ELOOP || openErr.errno === Errno.ENOTDIR)) {
          unlinkat(dirfd, name, 0)
          state.removed++
          continue
        }
        if (openErr instanceof SyscallError && openErr.errno === Errno.ENOENT) continue
        throw asFileError(openErr, names)
      }
      try {
        await empty(child, [...names, name.toString('utf8')], depth + 1, state)
      } finally {
        closeSync(child)
      }
      try {
        unlinkat(dirfd, name, AT_REMOVEDIR)
      } catch (rmErr) {
        throw asFileError(rmErr, names)
      }
    }
    state.removed++
  }
}
