import { openSync } from 'node:fs'
import { FileError } from './errors'
import { parsePath } from './path'
import {
  Errno, O_CLOEXEC, O_DIRECTORY, O_NOCTTY, O_NOFOLLOW, O_PATH, O_RDONLY, openat2, RESOLVE_BENEATH, RESOLVE_NO_MAGICLINKS, RESOLVE_NO_SYMLINKS, RESOLVE_NO_XDEV, SyscallError,
} from './syscalls'

/**
 * How every name under a site's home is resolved, whatever the operation:
 * - RESOLVE_BENEATH: the kernel refuses any step out of the directory fd (`..` past it,
 *   absolute symlinks), checked during the walk itself, so no rename in between can defeat it;
 * - RESOLVE_NO_SYMLINKS (implies RESOLVE_NO_MAGICLINKS, also set for clarity): no symlink is
 *   followed anywhere in the path, the last name included, so a tenant with a shell in the
 *   container cannot swap a folder for a symlink to /etc, /proc/1/root or another site's volume
 *   between our check and our use. pterodactyl/wings' symlink advisories are the history:
 *   creating files on the host (CVE-2023-25152, GHSA-p8r3-83r8-jwj5), deleting host folders
 *   recursively (CVE-2023-25168, GHSA-66p8-j459-rq63), reading outside the server root
 *   (CVE-2024-27102, GHSA-494h-9924-xww9, fixed by a rewrite on *at() calls);
 * - RESOLVE_NO_XDEV: no crossing into another mount (a volume never holds one; if it ever
 *   did, it would not be the site's).
 * The home itself is opened with `openHome`, from the runtime's trusted host path.
 */
export const RESOLVE = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV

/**
 * Opens a site's home folder from `hostPath`, a trusted path from the runtime (the volume's
 * mount point): the fd every other name is resolved beneath. The fd is the caller's to close.
 * Throws node:fs's error when the folder is missing.
 */
export function openHome(hostPath: string): number {
  return openSync(hostPath, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
}

/** A resolved path: its names and a fd opened beneath the home. */
export interface Resolved {
  names: string[]
  fd: number
}

/**
 * Checks `path` (parsePath's rules) and opens it beneath `homeFd` with `flags` (O_PATH for a
 * handle that opens nothing: no FIFO blocks, no device driver runs). The fd is the caller's to
 * close. Throws FileError: bad_path (a rule, a symlink, a file in the middle), not_found.
 */
export function resolve(homeFd: number, path: string, flags: number): Resolved {
  const names = parsePath(path)
  return { names, fd: openBeneath(homeFd, names, flags) }
}

/**
 * Opens `names` (already checked, relative to `dirfd`; [] is `dirfd` itself) with RESOLVE.
 * `shown` is the path as the caller gave it, for messages.
 */
export function openBeneath(dirfd: number, names: string[] | string, flags: number, shown: string[] = typeof names === 'string' ? [names] : names, mode = 0): number {
  const relative = typeof names === 'string' ? names : names.length === 0 ? '.' : names.join('/')
  try {
    // openat2, unlike openat, refuses flags that mean nothing with O_PATH (O_NOCTTY): EINVAL.
    return openat2(dirfd, relative, flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY), RESOLVE, mode)
  } catch (err) {
    throw asFileError(err, shown)
  }
}

/**
 * Opens the folder `name` (one entry of the folder `dirfd`, as readdir gave it: raw bytes, which
 * need not be UTF-8) as an O_PATH handle with RESOLVE, for a walk of a tree beneath a home.
 * Null when the entry is gone or no longer a folder (the tenant removed it, or swapped it for
 * a symlink or a file since it was listed): a walk skips it. Other failures throw SyscallError.
 */
export function openSubfolder(dirfd: number, name: string | Uint8Array): number | null {
  try {
    return openat2(dirfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE)
  } catch (err) {
    if (err instanceof SyscallError && (err.errno === Errno.ENOENT || err.errno === Errno.ELOOP || err.errno === Errno.ENOTDIR || err.errno === Errno.EXDEV)) return null
    throw err
  }
}

/** The path for messages: the caller's own input, never a host path; long ones cut. */
export function display(names: string[]): string {
  const path = names.join('/')
  return path.length > 120 ? `${path.slice(0, 117)}...` : path
}

/**
 * Turns a failed system call on `names` into the FileError the caller should see; other errors
 * are returned unchanged (a bug or an unexpected state: 500, logged).
 */
export function asFileError(err: unknown, names: string[]): unknown {
  const errno = err instanceof SyscallError ? err.errno : nodeErrno(err)
  const path = display(names)
  switch (errno) {
    case Errno.ELOOP:
      return new FileError('bad_path', `The path '${path}' goes through a symbolic link; the files API never follows symlinks (replace it with a real file or folder from the site's shell).`)
    case Errno.EXDEV:
      return new FileError('bad_path', `The path '${path}' leads out of the site's home.`)
    case Errno.ENOENT:
      return new FileError('not_found', `Nothing exists at '${path}'`, { op: 'list' })
    case Errno.ENOTDIR:
      return new FileError('bad_path', `A part of the path '${path}' is a file, not a folder.`)
    case Errno.ENAMETOOLONG:
      return new FileError('bad_path', `The path '${path}' is too long.`)
    case Errno.ENOSPC:
    case Errno.EDQUOT:
      return new FileError('no_space', "The site's disk is full; delete files first.")
    case Errno.ENOTEMPTY:
    case Errno.EEXIST:
      return new FileError('busy', `'${path}' changed while it was being worked on; retry.`)
  }
  return err
}

/** errno of an error thrown by node:fs (its `errno` is negative in Bun and Node). */
function nodeErrno(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno
  return typeof n === 'number' ? Math.abs(n) : undefined
}
