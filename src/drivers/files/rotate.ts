import { closeSync, fstatSync } from 'node:fs'
import { FileError } from './errors'
import { parsePath } from './path'
import { asFileError, openBeneath } from './resolver'
import { Errno, O_DIRECTORY, O_PATH, renameat, SyscallError, unlinkat } from './syscalls'

/** renameat's answers when a folder (or a file where a folder is renamed) holds the new name. */
const IN_THE_WAY = new Set<number>([Errno.EISDIR, Errno.ENOTDIR, Errno.ENOTEMPTY, Errno.EEXIST])

/** The most rotated files a log may keep (logs.rotate_keep is checked against it). */
export const MAX_ROTATED = 100

/**
 * Rotates the log at `path` beneath the home folder `homeFd` by renaming, as logrotate's
 * `create` mode does: `name.{keep-1}` becomes `name.{keep}` (the one there before is replaced),
 * ... `name.1` becomes `name.2`, then `name` becomes `name.1`, and rotated files past `keep`
 * (left by a larger keep before) are deleted. Nothing is copied or truncated: a writer that has
 * the file open keeps writing into the same inode, now `name.1`, until it opens `name` again
 * (domain/logs/rotation.ts makes the site's servers do so), so no line is lost. Files keep their
 * owner (the site user) and stay in the site's home.
 *
 * Every name is one component in the log's folder, resolved beneath the home (no symlink
 * followed; renameat and unlinkat act on the name itself, a symlink planted there is renamed or
 * removed, never followed). Returns false, touching nothing, when `path` is not a regular file
 * (missing, a folder, a link or a special file). A tenant's folder named `name.N` makes the
 * rotation fail with a FileError (wrong_type) until it is removed.
 */
export function rotateBeneath(homeFd: number, path: string, keep: number): boolean {
  if (!Number.isSafeInteger(keep) || keep < 1 || keep > MAX_ROTATED) throw new Error(`keep must be an integer from 1 to ${MAX_ROTATED} (got ${keep})`)
  const names = parsePath(path)
  if (names.length === 0) throw new FileError('bad_path', 'The path is the home folder itself; name a log file, such as logs/error.log.')
  const name = names.at(-1)!
  let parent: number
  try {
    parent = names.length === 1 ? homeFd : openBeneath(homeFd, names.slice(0, -1), O_PATH | O_DIRECTORY, names)
  } catch (err) {
    if (err instanceof FileError && (err.problem === 'not_found' || err.problem === 'bad_path')) return false
    throw err
  }
  try {
    if (!isRegularFile(parent, name, names)) return false
    const move = (from: string, to: string) => {
      try {
        renameat(parent, from, parent, to)
      } catch (err) {
        if (err instanceof SyscallError && err.errno === Errno.ENOENT) return
        if (err instanceof SyscallError && IN_THE_WAY.has(err.errno)) {
          throw new FileError('wrong_type', `'${[...names.slice(0, -1), to].join('/')}' is a folder in the way of the rotation of '${names.join('/')}'; delete or rename it.`)
        }
        throw asFileError(err, names)
      }
    }
    for (let i = keep - 1; i >= 1; i--) move(`${name}.${i}`, `${name}.${i + 1}`)
    move(name, `${name}.1`)
    // Rotated files a larger keep left behind: up to the first one missing (or not a file: a
    // folder the site made there is its own, and the rotation itself is done).
    for (let i = keep + 1; i <= MAX_ROTATED; i++) {
      try {
        unlinkat(parent, `${name}.${i}`, 0)
      } catch {
        break
      }
    }
    return true
  } finally {
    if (parent !== homeFd) closeSync(parent)
  }
}

function isRegularFile(parent: number, name: string, names: string[]): boolean {
  let fd: number
  try {
    fd = openBeneath(parent, name, O_PATH, names)
  } catch (err) {
    if (err instanceof FileError && (err.problem === 'not_found' || err.problem === 'bad_path')) return false
    throw err
  }
  try {
    return fstatSync(fd).isFile()
  } finally {
    closeSync(fd)
  }
}
