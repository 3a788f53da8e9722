import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs'
import { open as openHandle, readdir } from 'node:fs/promises'
import { SiteNotRunnableError } from '../runtime/types'
import { FileError } from './errors'
import { openHome, RESOLVE } from './resolver'
import { Errno, fdPath, O_CLOEXEC, O_DIRECTORY, O_NONBLOCK, O_PATH, O_RDONLY, openat2, statxAt, SyscallError, type EntryStat } from './syscalls'

/** What an entry of a site's home is; `other` is a FIFO, socket or device node, never opened. */
export type SiteEntryType = 'file' | 'dir' | 'symlink' | 'other'

/** One entry of a folder, as `list` and `stat` see it (a symlink is itself, never its target). */
export interface SiteEntry {
  name: string
  type: SiteEntryType
  size: number
  /** Whole milliseconds (the same from `list`, `stat` and `read` for an unchanged file). */
  mtimeMs: number
}

/** A regular file's first bytes, as `read` returns them. */
export interface SiteFileContent {
  /** At most the `maxBytes` asked for. */
  data: Buffer
  /** The file's size when it was opened (may be more than `data` holds). */
  size: number
  mtimeMs: number
  /** True when the file had more than `maxBytes`: `data` is its beginning only. */
  truncated: boolean
}

/**
 * Read-only access to one site's home, for the AI modules (src/modules), which may not touch the
 * filesystem any other way (docs/architecture.md; src/modules/no-fs.test.ts checks it). Paths are
 * relative to the home, `/`-separated, with no `..` segment (`public/blog/index.html`).
 *
 * Contracts, whatever the tenant does meanwhile from a shell in the container:
 * - Every path is resolved beneath the home's fd by openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS
 *   | RESOLVE_NO_XDEV) (resolver.ts): no symlink is followed anywhere in it, the last name
 *   included, so a folder swapped for a link between a listing and a read makes that read find
 *   nothing; it can never reach the host's files or another site's volume.
 * - Only regular files are opened, and only folders are listed: the target is opened O_PATH
 *   first (which opens nothing: a FIFO does not block, a device driver does not run) and checked
 *   with fstat, then its inode reopened through /proc/self/fd.
 * - `read` reads at most `maxBytes`, however large the file is or grows.
 * - What is missing, is a link, or is not of the kind asked for is `null`, never an error: the
 *   tenant may change anything at any moment. A path that breaks the rules above throws FileError
 *   (a bug in the caller); anything else unexpected throws.
 */
export interface SiteReader {
  /**
   * The entries of the folder at `path`, sorted by name (JavaScript string order), hidden ones
   * included; `stat`s only the first `maxEntries` names. Null when the path is no folder. Names
   * that are not valid UTF-8 are left out (no path can name them).
   */
  list(path: string, maxEntries?: number): Promise<SiteEntry[] | null>
  /**
   * The entry at `path`, or null when nothing is there or the path goes through a link (its last
   * name included). Awaited: a home on another node answers through its agent.
   */
  stat(path: string): SiteEntry | null | Promise<SiteEntry | null>
  /** The first `maxBytes` of the regular file at `path`, or null when it is not one. */
  read(path: string, maxBytes: number): Promise<SiteFileContent | null>
}

/** The sites' homes, each opened for the time of one call (the port modules are given). */
export interface SiteFiles {
  /**
   * Opens `slug`'s home, runs `fn` with a reader of it, and closes the home when `fn` settles
   * (the reader must not be used after). Rejects when the site has no files now (its volume is
   * missing or being replaced): the runtime's SiteNotRunnableError.
   */
  read<T>(slug: string, fn: (reader: SiteReader) => Promise<T> | T): Promise<T>
}

/** A SiteReader the caller closes once done with it. */
export type OpenedReader = SiteReader & { close(): void }

/**
 * SiteFiles over the runtime's host path of each site's volume (Berth runs on the Docker host).
 * `open` opens a reader on a home path: HomeReader's by default; in a cluster the node-aware one
 * of drivers/cluster/node-homes.ts, which reads a `node:` path through the node's agent.
 */
export class HostSiteFiles implements SiteFiles {
  constructor(
    private readonly homePath: (slug: string) => Promise<string>,
    private readonly open: (hostPath: string) => OpenedReader | Promise<OpenedReader> = (hostPath) => HomeReader.open(hostPath),
  ) {}

  async read<T>(slug: string, fn: (reader: SiteReader) => Promise<T> | T): Promise<T> {
    const hostPath = await this.homePath(slug)
    let home: OpenedReader
    try {
      home = await this.open(hostPath)
    } catch {
      throw new SiteNotRunnableError(`The files of site '${slug}' are not available right now.`)
    }
    try {
      return await fn(home)
    } finally {
      home.close()
    }
  }
}

/** Errors of a lookup that mean "not there, or not something we follow": the answer is null. */
const ABSENT = new Set<number>([Errno.ENOENT, Errno.ENOTDIR, Errno.ELOOP, Errno.EXDEV, Errno.EACCES, Errno.ENAMETOOLONG])

const NAMES = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** A SiteReader on one open home fd. */
export class HomeReader implements SiteReader {
  private closed = false

  constructor(private readonly home: number) {}

  /** Opens the home at `hostPath`, a trusted path from the runtime; the caller closes it. */
  static open(hostPath: string): HomeReader {
    return new HomeReader(openHome(hostPath))
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    closeSync(this.home)
  }

  async list(path: string, maxEntries = Number.POSITIVE_INFINITY): Promise<SiteEntry[] | null> {
    const fd = this.lookup(path, O_PATH | O_DIRECTORY)
    if (fd === null) return null
    try {
      let raw: Buffer[]
      try {
        raw = (await readdir(fdPath(fd), { encoding: 'buffer' })) as Buffer[]
      } catch (err) {
        if (ABSENT.has(errnoOf(err) ?? -1)) return null
        throw err
      }
      const named: [string, Buffer][] = []
      for (const name of raw) {
        const text = utf8(name)
        if (text !== null) named.push([text, name])
      }
      named.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
      const entries: SiteEntry[] = []
      for (const [name, bytes] of named.slice(0, maxEntries)) {
        let st: EntryStat
        try {
          st = statxAt(fd, bytes)
        } catch (err) {
          if (err instanceof SyscallError && err.errno === Errno.ENOENT) continue // removed meanwhile
          throw err
        }
        entries.push({ name, type: typeOf(st.mode), size: st.size, mtimeMs: st.mtimeMs })
      }
      return entries
    } finally {
      closeSync(fd)
    }
  }

  stat(path: string): SiteEntry | null {
    const fd = this.lookup(path, O_PATH)
    if (fd === null) return null
    try {
      const st = fstatSync(fd, { bigint: true })
      // A symlink at the last name is never seen here: RESOLVE_NO_SYMLINKS refused it (null).
      return { name: path.split('/').at(-1) ?? '', type: typeOf(Number(st.mode)), size: Number(st.size), mtimeMs: millisOf(st.mtimeNs) }
    } finally {
      closeSync(fd)
    }
  }

  async read(path: string, maxBytes: number): Promise<SiteFileContent | null> {
    const fd = this.lookup(path, O_PATH)
    if (fd === null) return null
    try {
      const st = fstatSync(fd, { bigint: true })
      if (!st.isFile()) return null
      const size = Number(st.size)
      const data = Buffer.allocUnsafe(Math.max(0, Math.min(maxBytes, size)))
      const length = data.length <= SYNC_READ_BYTES ? readNow(fd, data) : await readLater(fd, data)
      return { data: data.subarray(0, length), size, mtimeMs: millisOf(st.mtimeNs), truncated: size > maxBytes }
    } finally {
      closeSync(fd)
    }
  }

  /** `path` opened beneath the home with RESOLVE and `flags`, or null when absent, a link or out of the home. */
  private lookup(path: string, flags: number): number | null {
    if (this.closed) throw new Error('the site home was read after it was closed')
    try {
      return openat2(this.home, relativeOf(path), flags | O_CLOEXEC, RESOLVE)
    } catch (err) {
      if (err instanceof SyscallError && ABSENT.has(err.errno)) return null
      throw err
    }
  }
}

/**
 * Reads up to this many bytes without leaving the event loop: a page's worth from the page cache
 * takes microseconds, less than the thread-pool round trips of an asynchronous open, read and
 * close: the 300 pages of 3 KB of bench/seo.ts's report site were read in 52 ms that way, 35 ms
 * with readFile (before this reader), 5 ms like this (in-process, same run). Longer reads go to
 * the thread pool, so a big file never stalls the edge.
 */
const SYNC_READ_BYTES = 64 * 1024

/** Fills `data` from the regular file behind the O_PATH `fd` (its own inode, reopened: no name is looked up again). */
function readNow(fd: number, data: Buffer): number {
  const file = openSync(fdPath(fd), O_RDONLY | O_NONBLOCK | O_CLOEXEC)
  try {
    let length = 0
    while (length < data.length) {
      const n = readSync(file, data, length, data.length - length, length)
      if (n === 0) break
      length += n
    }
    return length
  } finally {
    closeSync(file)
  }
}

/** readNow off the event loop, for reads past SYNC_READ_BYTES. */
async function readLater(fd: number, data: Buffer): Promise<number> {
  const file = await openHandle(fdPath(fd), O_RDONLY | O_NONBLOCK | O_CLOEXEC)
  try {
    let length = 0
    while (length < data.length) {
      const { bytesRead } = await file.read(data, length, data.length - length, length)
      if (bytesRead === 0) break
      length += bytesRead
    }
    return length
  } finally {
    await file.close()
  }
}

/** The checked relative form of a module's path: no `..`, no NUL, no absolute path; '' is the home. */
function relativeOf(path: string): string {
  if (path.includes('\0') || path.startsWith('/')) throw new FileError('bad_path', 'A site path is relative and holds no NUL byte.')
  const names = path.split('/').filter((n) => n !== '' && n !== '.')
  if (names.includes('..')) throw new FileError('bad_path', "A site path holds no '..' segment.")
  return names.length === 0 ? '.' : names.join('/')
}

function typeOf(mode: number): SiteEntryType {
  switch (mode & constants.S_IFMT) {
    case constants.S_IFREG:
      return 'file'
    case constants.S_IFDIR:
      return 'dir'
    case constants.S_IFLNK:
      return 'symlink'
    default:
      return 'other'
  }
}

/** Whole milliseconds, as statxAt gives them: `list` and `read` agree to the millisecond on an unchanged file. */
function millisOf(ns: bigint): number {
  const ms = ns / 1_000_000n
  return Number(ns < 0n && ms * 1_000_000n !== ns ? ms - 1n : ms)
}

function utf8(name: Buffer): string | null {
  try {
    return NAMES.decode(name)
  } catch {
    return null
  }
}

function errnoOf(err: unknown): number | undefined {
  const n = (err as { errno?: unknown } | null)?.errno
  return typeof n === 'number' ? Math.abs(n) : undefined
}
