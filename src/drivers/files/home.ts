import { closeSync, constants, fchmodSync, fchownSync, fstatSync, openSync, readdirSync, readSync, writeSync, type Stats } from 'node:fs'
import { open as openHandle, type FileHandle } from 'node:fs/promises'
import { entryOf, notAFile, notText, tooLarge, type FileEntry } from './entries'
import { FileError } from './errors'
import { parsePath } from './path'
import { removeTree } from './remove'
import { rotateBeneath } from './rotate'
import { asFileError, display, openBeneath, openHome } from './resolver'
import { AT_REMOVEDIR, Errno, fdPath, mkdirat, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_PATH, O_RDONLY, O_WRONLY, renameat, statxAt, SyscallError, unlinkat, type EntryStat } from './syscalls'
import type { FileOwner, Home, OpenHome } from './types'

export { SITE_OWNER, type FileOwner, type Home, type ReadHandle } from './types'
export type { EntryType, FileEntry } from './entries'

const [O_APPEND, DIR_MODE, FILE_MODE] = [constants.O_APPEND, 0o755, 0o644]

/**
 * A site's home folder, opened once from the runtime's host path, and every operation of the
 * files API on it. Every name is resolved beneath the home fd with openat2 (resolver.ts), and
 * then only fds are used: a tenant who renames folders or plants symlinks from a shell in the
 * container, at any moment, can at worst make an operation fail; it can never make Berth, which
 * runs as root, read, write or delete anything outside the home.
 *
 * Contracts:
 * - Nothing is ever opened but regular files and folders: targets are first opened O_PATH
 *   (which opens nothing: a FIFO does not block, a device driver does not run), checked with
 *   fstat, then reopened through /proc/self/fd.
 * - Writes replace the file atomically (a temporary file in the same folder, renamed over the
 *   name), so the site never serves half a file; the new file is owned by `owner` and keeps the
 *   old one's permission bits (0644 when new). Missing parent folders are created (0755).
 * - Writes are not fsync'ed: they reach the page cache, which the site serves at once, and the
 *   disk on the kernel's usual schedule (a crash of the host can lose the last seconds).
 * - Errors are FileError (errors.ts) for anything the caller can fix; anything else is a bug.
 */
export class SiteHome implements Home {
  private constructor(
    private readonly fd: number,
    private readonly owner: FileOwner,
  ) {}

  /** Opens the home at `hostPath`, a trusted path from the runtime (the volume's folder). */
  static open(hostPath: string, owner: FileOwner): SiteHome {
    return new SiteHome(openHome(hostPath), owner)
  }

  close(): void {
    closeSync(this.fd)
  }

  /**
   * The entries of the folder at `path`, sorted by name, at most `maxEntries` of them
   * (`truncated` says more exist). Symlinks are listed as such, never followed.
   */
  list(path: string, maxEntries: number): { path: string; entries: FileEntry[]; truncated: boolean } {
    const names = parsePath(path)
    return this.withFd(names, O_PATH, (fd) => {
      const st = fstatSync(fd)
      if (!st.isDirectory()) throw st.isFile() ? new FileError('wrong_type', `'${display(names)}' is not a folder`, { op: 'read' }) : new FileError('wrong_type', `'${display(names)}' is not a folder.`)
      const raw = (readdirSync(fdPath(fd), { encoding: 'buffer' }) as Buffer[]).sort(Buffer.compare)
      const entries: FileEntry[] = []
      for (const name of raw.slice(0, maxEntries)) {
        let st: EntryStat
        try {
          st = statxAt(fd, name)
        } catch (err) {
          if (err instanceof SyscallError && err.errno === Errno.ENOENT) continue // removed meanwhile
          throw err
        }
        entries.push(entryOf([...names, name.toString('utf8')], st))
      }
      return { path: names.join('/'), entries, truncated: raw.length > maxEntries }
    })
  }

  /**
   * The folder at `path`, normalised (`public//css/` is `public/css`; `''` the home itself), for
   * a process started there (the exec API's `cwd`). Resolved like every path (no `..`, no symlink
   * anywhere in it); not_found when missing, wrong_type when it is not a folder.
   */
  folder(path: string): string {
    const names = parsePath(path)
    return this.withFd(names, O_PATH, (fd) => {
      const st = fstatSync(fd)
      if (!st.isDirectory()) throw new FileError('wrong_type', `'${display(names)}' is not a folder`)
      return names.join('/')
    })
  }

  /**
   * The text of the regular file at `path`: too_large past `maxBytes`, not_text when it is not
   * UTF-8 or holds a NUL byte.
   */
  read(path: string, maxBytes: number): FileEntry & { content: string } {
    const names = parsePath(path)
    return this.withFd(names, O_PATH, (fd) => {
      const st = this.requireFile(fd, names)
      if (st.size > maxBytes) throw tooLarge(names, st.size, maxBytes)
      const data = this.readAll(fd, maxBytes + 1)
      if (data.length > maxBytes) throw tooLarge(names, data.length, maxBytes)
      if (data.includes(0)) throw notText(names, 'holds NUL bytes')
      let content: string
      try {
        content = TEXT.decode(data)
      } catch {
        throw notText(names, 'is not valid UTF-8')
      }
      return { ...entryOf(names, st), size: data.length, content }
    })
  }

  /**
   * Opens the regular file at `path` for reading, for readers of files the site itself writes
   * (its logs): a handle the caller closes, which stays valid after the home is closed. The path
   * is resolved like any other (no symlink anywhere in it), opened O_PATH and checked with fstat
   * first, so a FIFO, socket or device planted there is refused without being opened (no FIFO
   * blocks, no driver runs). Throws FileError: not_found (the file or a folder on the way is
   * missing), bad_path (a symlink, a file where a folder should be), wrong_type (a folder or
   * special file).
   */
  async openForReading(path: string): Promise<FileHandle> {
    const names = parsePath(path)
    const fd = openBeneath(this.fd, names, O_PATH)
    try {
      this.requireFile(fd, names)
      // The O_PATH fd's own inode, reopened: no name is looked up again.
      return await openHandle(fdPath(fd), O_RDONLY | O_NONBLOCK)
    } catch (err) {
      throw asFileError(err, names)
    } finally {
      closeSync(fd)
    }
  }

  /**
   * Writes `data` as the file at `path`, replacing a regular file there (never a folder, symlink
   * or special file). `created` is false when a file was replaced.
   */
  write(path: string, data: Uint8Array): FileEntry & { created: boolean } {
    const names = parsePath(path)
    if (names.length === 0) throw new FileError('bad_path', 'The path is the home folder itself; name a file, such as public/index.html.')
    const name = names.at(-1)!
    return this.withParent(names, (parent) => {
      const existing = this.statAt(parent, name, names)
      if (existing && !existing.isFile()) throw notAFile(names, existing)
      const tmp = `.berth-${crypto.randomUUID()}.tmp`
      let stats: Stats
      // O_CREAT|O_EXCL: always a new regular file, never something that was already there.
      let fd: number | null = openBeneath(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, names, 0o600)
      try {
        for (let done = 0; done < data.length; ) done += writeSync(fd, data, done, data.length - done)
        fchownSync(fd, this.owner.uid, this.owner.gid)
        fchmodSync(fd, existing ? existing.mode & 0o777 : FILE_MODE)
        stats = fstatSync(fd)
        closeSync(fd)
        fd = null
        // Replaces whatever the name holds now, even something planted since statAt: rename
        // never follows a symlink, and the new file is ours.
        renameat(parent, tmp, parent, name)
      } catch (err) {
        // Closed once only: Bun's own threads may reuse a closed fd number at any moment.
        if (fd !== null) closeSync(fd)
        unlinkQuietly(parent, tmp)
        if (err instanceof SyscallError && err.errno === Errno.EISDIR) throw new FileError('wrong_type', `'${display(names)}' is a folder; delete it first or choose another name.`)
        throw asFileError(err, names)
      }
      return { ...entryOf(names, stats), created: !existing }
    })
  }

  /**
   * Appends `data` to the regular file at `path`, made (owned by `owner`, 0644, with any missing
   * folders) when absent: for files Berth writes on the site's behalf, such as the access log the
   * edge keeps for sites whose web server cannot (domain/logs/access-log.ts). As for reads, the
   * target is opened O_PATH and checked first: a symlink anywhere in the path, a folder, FIFO,
   * socket or device is refused, never opened. One write(2) with O_APPEND: lines the site's own
   * processes append meanwhile are not torn.
   */
  append(path: string, data: Uint8Array): void {
    const names = parsePath(path)
    if (names.length === 0) throw new FileError('bad_path', 'The path is the home folder itself; name a file.')
    const name = names.at(-1)!
    this.withParent(names, (parent) => {
      let fd: number | null = null
      try {
        fd = this.openToAppend(parent, name, names)
        for (let done = 0; done < data.length; ) done += writeSync(fd, data, done, data.length - done)
      } catch (err) {
        throw err instanceof FileError ? err : asFileError(err, names)
      } finally {
        if (fd !== null) closeSync(fd)
      }
    })
  }

  /** The regular file `name` in `parent` opened to append, made first (O_EXCL) when missing. */
  private openToAppend(parent: number, name: string, names: string[]): number {
    const existing = this.statAt(parent, name, names)
    if (!existing) {
      try {
        const fd = openBeneath(parent, name, O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW, names, FILE_MODE)
        try {
          fchownSync(fd, this.owner.uid, this.owner.gid)
          fchmodSync(fd, FILE_MODE)
        } catch (err) {
          closeSync(fd)
          throw err
        }
        return fd
      } catch (err) {
        // EEXIST (busy): made by the site since statAt; open what is there now, with the same checks.
        if (!(err instanceof FileError && err.problem === 'busy')) throw err
      }
    }
    const path = openBeneath(parent, name, O_PATH, names)
    try {
      this.requireFile(path, names)
      return openSync(fdPath(path), O_WRONLY | O_APPEND | O_NONBLOCK)
    } finally {
      closeSync(path)
    }
  }

  /**
   * Makes the folder at `path` and any missing parents (like `mkdir -p`). An existing folder is
   * no error (`created` false); an existing file, symlink or special file is.
   */
  mkdir(path: string): FileEntry & { created: boolean } {
    const names = parsePath(path)
    if (names.length === 0) throw new FileError('bad_path', 'The path is the home folder itself, which exists; name the folder to create.')
    const name = names.at(-1)!
    return this.withParent(names, (parent) => {
      const existing = this.statAt(parent, name, names)
      if (existing?.isDirectory()) return { ...entryOf(names, existing), created: false }
      if (existing) throw new FileError('wrong_type', `'${display(names)}' exists and is not a folder`, { op: 'delete' })
      const fd = this.openOrMakeDir(parent, name, names)
      try {
        return { ...entryOf(names, fstatSync(fd)), created: true }
      } finally {
        closeSync(fd)
      }
    })
  }

  /**
   * Deletes the file or folder at `path`, a folder with everything in it (symlinks inside are
   * removed, never followed). The home itself and special files cannot be deleted. `removed`
   * counts the entries removed, `path` included.
   */
  async remove(path: string): Promise<{ path: string; type: 'file' | 'dir'; removed: number }> {
    const names = parsePath(path)
    if (names.length === 0) throw new FileError('bad_path', 'The path is the home folder itself, which cannot be deleted; delete what is inside it instead.')
    const name = names.at(-1)!
    const parent = names.length === 1 ? this.fd : openBeneath(this.fd, names.slice(0, -1), O_PATH | O_DIRECTORY, names)
    try {
      const target = openBeneath(parent, name, O_PATH, names)
      let isDir: boolean
      let removed = 1
      try {
        const st = fstatSync(target)
        if (!st.isFile() && !st.isDirectory()) throw notAFile(names, st)
        isDir = st.isDirectory()
        if (isDir) removed += await removeTree(target, names)
      } finally {
        closeSync(target)
      }
      try {
        unlinkat(parent, name, isDir ? AT_REMOVEDIR : 0)
      } catch (err) {
        throw asFileError(err, names)
      }
      return { path: names.join('/'), type: isDir ? 'dir' : 'file', removed }
    } finally {
      if (parent !== this.fd) closeSync(parent)
    }
  }

  /** Rotates the log at `path`, keeping `keep` rotated files (rotate.ts: rotateBeneath says how); false when it is not a regular file. */
  rotate(path: string, keep: number): boolean { return rotateBeneath(this.fd, path, keep) }

  /** Opens `names` beneath the home, runs `fn` on the fd, closes it. */
  private withFd<T>(names: string[], flags: number, fn: (fd: number) => T): T {
    const fd = openBeneath(this.fd, names, flags)
    try {
      return fn(fd)
    } catch (err) {
      throw asFileError(err, names)
    } finally {
      closeSync(fd)
    }
  }

  /** Runs `fn` on the parent folder of `names`, made first if missing (write, mkdir). */
  private withParent<T>(names: string[], fn: (parent: number) => T): T {
    const parent = this.ensureDirs(names.slice(0, -1), names)
    try {
      return fn(parent)
    } finally {
      if (parent !== this.fd) closeSync(parent)
    }
  }

  /** The folder at `dirs`, made with its missing parents; one openat2 when it exists. */
  private ensureDirs(dirs: string[], names: string[]): number {
    if (dirs.length === 0) return this.fd
    try {
      return openBeneath(this.fd, dirs, O_PATH | O_DIRECTORY, names)
    } catch (err) {
      if (!(err instanceof FileError && err.problem === 'not_found')) throw err
    }
    let current = this.fd
    try {
      for (const dir of dirs) {
        const next = this.openOrMakeDir(current, dir, names)
        if (current !== this.fd) closeSync(current)
        current = next
      }
    } catch (err) {
      if (current !== this.fd) closeSync(current)
      throw err
    }
    return current
  }

  /** Opens the folder `name` in `dirfd`, making it (owned by the site user) when missing. */
  private openOrMakeDir(dirfd: number, name: string, names: string[]): number {
    try {
      return openBeneath(dirfd, name, O_PATH | O_DIRECTORY, names)
    } catch (err) {
      if (!(err instanceof FileError && err.problem === 'not_found')) throw err
    }
    try {
      mkdirat(dirfd, name, DIR_MODE)
    } catch (err) {
      // EEXIST: made by someone else since; the open below checks what it is.
      if (!(err instanceof SyscallError && err.errno === Errno.EEXIST)) throw asFileError(err, names)
    }
    const fd = openBeneath(dirfd, name, O_RDONLY | O_DIRECTORY, names)
    try {
      fchownSync(fd, this.owner.uid, this.owner.gid)
      fchmodSync(fd, DIR_MODE)
    } catch (err) {
      closeSync(fd)
      throw asFileError(err, names)
    }
    return fd
  }

  /** What `name` in `dirfd` is, or null when nothing is there; a symlink is bad_path. */
  private statAt(dirfd: number, name: string, names: string[]): Stats | null {
    let fd: number
    try {
      fd = openBeneath(dirfd, name, O_PATH, names)
    } catch (err) {
      if (err instanceof FileError && err.problem === 'not_found') return null
      throw err
    }
    try {
      return fstatSync(fd)
    } finally {
      closeSync(fd)
    }
  }

  private requireFile(fd: number, names: string[]): Stats {
    const st = fstatSync(fd)
    if (!st.isFile()) throw notAFile(names, st)
    return st
  }

  /** Reads at most `limit` bytes of the regular file behind the O_PATH `fd`. */
  private readAll(fd: number, limit: number): Buffer {
    const file = openSync(fdPath(fd), O_RDONLY | O_NONBLOCK)
    try {
      const buffer = Buffer.allocUnsafe(Math.min(limit, fstatSync(file).size + 1))
      let size = 0
      while (size < buffer.length) {
        const n = readSync(file, buffer, size, buffer.length - size, null)
        if (n === 0) break
        size += n
      }
      return buffer.subarray(0, size)
    } finally {
      closeSync(file)
    }
  }
}

const TEXT = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function unlinkQuietly(dirfd: number, name: string) {
  try {
    unlinkat(dirfd, name, 0)
  } catch {
    // already gone
  }
}

/** The OpenHome of ./types.ts. */
export const openSiteHome: OpenHome = (hostPath, owner) => SiteHome.open(hostPath, owner)
