import { dlopen, FFIType, read } from 'bun:ffi'
import { closeSync, constants, openSync } from 'node:fs'

/**
 * The few Linux system calls the files driver needs that Node's `fs` lacks: openat2(2) with
 * RESOLVE_* flags, and the *at() calls that act on a name relative to a directory fd. They come
 * from glibc through bun:ffi (works in the compiled binary too). Loaded on first use, so that a
 * start-up that serves no file pays nothing.
 *
 * Every function returns a result or throws SyscallError carrying errno; callers classify by
 * `errno`, never by message.
 */

/** openat2 is 437 in the generic syscall table, which x86_64 and arm64 share for it. */
const SYS_OPENAT2 = 437n

// open(2) flags: Node's constants give the architecture's values where they differ (O_DIRECTORY,
// O_NOFOLLOW differ between x86_64 and arm64); O_PATH and O_CLOEXEC are the same on both.
export const O_RDONLY = constants.O_RDONLY
export const O_WRONLY = constants.O_WRONLY
export const O_CREAT = constants.O_CREAT
export const O_EXCL = constants.O_EXCL
export const O_NOCTTY = constants.O_NOCTTY
export const O_NONBLOCK = constants.O_NONBLOCK
export const O_DIRECTORY = constants.O_DIRECTORY
export const O_NOFOLLOW = constants.O_NOFOLLOW
export const O_CLOEXEC = 0o2000000
export const O_PATH = 0o10000000

// openat2(2) resolve flags (linux/openat2.h).
export const RESOLVE_NO_XDEV = 0x01n
export const RESOLVE_NO_MAGICLINKS = 0x02n
export const RESOLVE_NO_SYMLINKS = 0x04n
export const RESOLVE_BENEATH = 0x08n

export const AT_REMOVEDIR = 0x200
const AT_SYMLINK_NOFOLLOW = 0x100
const AT_NO_AUTOMOUNT = 0x800
const STATX_BASIC_STATS = 0x7ff

/** errno values used by the driver (asm-generic, identical on x86_64 and arm64). */
export const Errno = {
  EPERM: 1,
  ENOENT: 2,
  ENXIO: 6,
  EACCES: 13,
  EEXIST: 17,
  EXDEV: 18,
  ENOTDIR: 20,
  EISDIR: 21,
  EINVAL: 22,
  EMFILE: 24,
  ENOSPC: 28,
  ENAMETOOLONG: 36,
  ENOSYS: 38,
  ENOTEMPTY: 39,
  ELOOP: 40,
  EDQUOT: 122,
} as const

export class SyscallError extends Error {
  constructor(
    readonly call: string,
    readonly errno: number,
  ) {
    super(`${call} failed with errno ${errno}`)
  }
}

/**
 * openat2 answered ENOSYS: the kernel does not have it (before Linux 5.6), or, far more often, a
 * seccomp filter hides it. systemd's RestrictSUIDSGID= installs a filter that answers ENOSYS to
 * openat2 (it cannot inspect the mode inside struct open_how), and so do container runtimes'
 * older default profiles. Every name under a site's home is opened with openat2's RESOLVE_BENEATH,
 * and there is deliberately no fallback to openat (which cannot refuse a symlink swapped in
 * mid-path), so the files API, the logs, disk usage and restores all stop: the message says why
 * and what to change, for the log and for the hoster.
 */
export class Openat2UnavailableError extends SyscallError {
  constructor() {
    super('openat2', Errno.ENOSYS)
    this.message = OPENAT2_UNAVAILABLE
  }
}

export const OPENAT2_UNAVAILABLE = [
  'openat2(2) is not available to Berth (ENOSYS), so the files and logs APIs, disk usage and restores cannot work:',
  'a seccomp filter blocks it (systemd\'s RestrictSUIDSGID=yes, which units before this version of `berth install`',
  'set, or a container runtime\'s seccomp profile), or the kernel is older than Linux 5.6. Run `berth install` again',
  'and `systemctl daemon-reload` (or remove RestrictSUIDSGID= from any drop-in, or allow openat2 in the profile),',
  'then restart Berth.',
].join(' ')

const symbols = {
  // long syscall(long number, ...): called with openat2's four arguments, all integers or
  // pointers, which both ABIs pass in the same registers as for a non-variadic call.
  syscall: { args: [FFIType.i64, FFIType.i32, FFIType.ptr, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  __errno_location: { args: [], returns: FFIType.ptr },
  mkdirat: { args: [FFIType.i32, FFIType.ptr, FFIType.u32], returns: FFIType.i32 },
  unlinkat: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
  renameat: { args: [FFIType.i32, FFIType.ptr, FFIType.i32, FFIType.ptr], returns: FFIType.i32 },
  statx: { args: [FFIType.i32, FFIType.ptr, FFIType.i32, FFIType.u32, FFIType.ptr], returns: FFIType.i32 },
} as const

let libc: ReturnType<typeof dlopen<typeof symbols>>['symbols'] | undefined

function lib() {
  if (libc) return libc
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    throw new Error(`The files API needs Linux on x86_64 or arm64 (openat2); this is ${process.platform}/${process.arch}.`)
  }
  libc = dlopen('libc.so.6', symbols).symbols
  return libc
}

/**
 * errno of the last failed libc call on this thread. Read right after the call, with no other
 * libc call in between: JavaScript runs on one thread and nothing else runs between the two
 * FFI calls.
 */
const errno = () => read.i32(lib().__errno_location()!, 0)

/**
 * A NUL-terminated copy of `name` for C. Names are checked NUL-free before they get here; raw
 * bytes (names read from a directory, maybe not UTF-8) pass through unchanged.
 */
const cString = (name: string | Uint8Array) => (typeof name === 'string' ? Buffer.from(`${name}\0`, 'utf8') : Buffer.concat([name, ZERO]))
const ZERO = new Uint8Array(1)

/** struct open_how { u64 flags; u64 mode; u64 resolve; }; reused, as calls never overlap. */
const how = new BigUint64Array(3)

/**
 * openat2(dirfd, path, {flags, mode, resolve}): a new fd, or SyscallError; Openat2UnavailableError
 * (ENOSYS) when the call itself is missing or filtered.
 */
export function openat2(dirfd: number, path: string | Uint8Array, flags: number, resolve: bigint, mode = 0): number {
  const c = lib()
  how[0] = BigInt(flags)
  how[1] = BigInt(mode)
  how[2] = resolve
  const fd = Number(c.syscall(SYS_OPENAT2, dirfd, cString(path), how, 24n))
  if (fd < 0) {
    const code = errno()
    throw code === Errno.ENOSYS ? new Openat2UnavailableError() : new SyscallError('openat2', code)
  }
  return fd
}

/**
 * Whether this process may call openat2 with RESOLVE_BENEATH: null when it may, else the
 * reason (OPENAT2_UNAVAILABLE, or the failure). Run once at start-up so that a sandbox that
 * filters it (see Openat2UnavailableError) is reported before the first customer meets it.
 */
export function probeOpenat2(): string | null {
  let dirfd = -1
  try {
    dirfd = openSync('/', O_RDONLY | O_DIRECTORY | O_CLOEXEC)
    closeSync(openat2(dirfd, '.', O_PATH | O_DIRECTORY | O_CLOEXEC, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS))
    return null
  } catch (err) {
    return (err as Error).message
  } finally {
    if (dirfd >= 0) closeSync(dirfd)
  }
}

export function mkdirat(dirfd: number, name: string | Uint8Array, mode: number): void {
  if (lib().mkdirat(dirfd, cString(name), mode) !== 0) throw new SyscallError('mkdirat', errno())
}

export function unlinkat(dirfd: number, name: string | Uint8Array, flags: number): void {
  if (lib().unlinkat(dirfd, cString(name), flags) !== 0) throw new SyscallError('unlinkat', errno())
}

export function renameat(fromDirfd: number, from: string, toDirfd: number, to: string): void {
  if (lib().renameat(fromDirfd, cString(from), toDirfd, cString(to)) !== 0) throw new SyscallError('renameat', errno())
}

/** What the files API shows of an entry, and what a disk-usage walk counts; named as in node:fs Stats. */
export interface EntryStat {
  mode: number
  size: number
  mtimeMs: number
  /** 512-byte blocks allocated on disk. */
  blocks: number
  nlink: number
  ino: bigint
}

/**
 * struct statx (linux/stat.h): the same layout on every architecture, unlike struct stat. Byte
 * offsets read: stx_nlink 16, stx_mode 28, stx_ino 32, stx_size 40, stx_blocks 48, stx_mtime 112.
 */
const statxBuffer = new Uint8Array(256)
const statxView = new DataView(statxBuffer.buffer)

/**
 * statx(dirfd, name, AT_SYMLINK_NOFOLLOW): the entry `name` of the folder `dirfd` itself, a
 * symlink included, never what it points at. A name from readdir holds no '/', so nothing but
 * that one entry is looked up. 2.5x faster than lstat through /proc/self/fd/N/name for a
 * 1,000-entry listing (bench/files.ts), as procfs's magic link is not walked each time.
 */
export function statxAt(dirfd: number, name: string | Uint8Array): EntryStat {
  if (lib().statx(dirfd, cString(name), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, STATX_BASIC_STATS, statxBuffer) !== 0) throw new SyscallError('statx', errno())
  return {
    mode: statxView.getUint16(28, true),
    size: Number(statxView.getBigUint64(40, true)),
    mtimeMs: Number(statxView.getBigInt64(112, true)) * 1000 + Math.floor(statxView.getUint32(120, true) / 1e6),
    blocks: Number(statxView.getBigUint64(48, true)),
    nlink: statxView.getUint32(16, true),
    ino: statxView.getBigUint64(32, true),
  }
}

/** The path through which an fd, even an O_PATH one, can be reopened or listed (proc(5)). */
export const fdPath = (fd: number) => `/proc/self/fd/${fd}`
