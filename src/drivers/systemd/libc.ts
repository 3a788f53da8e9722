import { dlopen, FFIType, ptr } from 'bun:ffi'

/**
 * The socket calls Bun has no API for, from glibc through bun:ffi (as drivers/files/syscalls.ts
 * does; works in the compiled binary): listen(2) and shutdown(2) on a socket systemd passed
 * (Bun 1.4.5 cannot serve on an inherited descriptor: oven-sh/bun#36491 is open), getsockname(2)
 * and SO_TYPE to tell which listener a passed socket is, and a unix datagram socket for
 * sd_notify (neither Bun.udpSocket nor node:dgram speaks AF_UNIX). Loaded on first use: a Berth
 * not under systemd never loads it.
 */
let lib: ReturnType<typeof load> | null = null

function load() {
  return dlopen('libc.so.6', {
    listen: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    shutdown: { args: [FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    getsockname: { args: [FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    getsockopt: { args: [FFIType.i32, FFIType.i32, FFIType.i32, FFIType.ptr, FFIType.ptr], returns: FFIType.i32 },
    socket: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    close: { args: [FFIType.i32], returns: FFIType.i32 },
    fcntl: { args: [FFIType.i32, FFIType.i32, FFIType.i32], returns: FFIType.i32 },
    pipe2: { args: [FFIType.ptr, FFIType.i32], returns: FFIType.i32 },
    sendmsg: { args: [FFIType.i32, FFIType.ptr, FFIType.i32], returns: FFIType.i64 },
    read: { args: [FFIType.i32, FFIType.ptr, FFIType.u64], returns: FFIType.i64 },
  }).symbols
}

const libc = () => (lib ??= load())

const AF_UNIX = 1
const AF_INET = 2
const AF_INET6 = 10
const SOCK_STREAM = 1
const SOCK_DGRAM = 2
const SOCK_CLOEXEC = 0o2000000
const SOL_SOCKET = 1
const SO_TYPE = 3
const SHUT_RD = 0
const MSG_NOSIGNAL = 0x4000
const F_SETFD = 2
const O_NONBLOCK = 0o4000
const SCM_RIGHTS = 1
const FD_CLOEXEC = 1

/** What a passed socket is: its transport and the address it is bound to. */
export interface SocketName {
  transport: 'tcp' | 'udp'
  /** As Bun prints it: `0.0.0.0`, `127.0.0.1`, `::`. */
  address: string
  port: number
}

/** The transport and bound address of socket `fd`, or null when it is no IPv4/IPv6 socket. */
export function socketName(fd: number): SocketName | null {
  const type = new Int32Array(1)
  const typeLen = new Uint32Array([4])
  if (libc().getsockopt(fd, SOL_SOCKET, SO_TYPE, ptr(type), ptr(typeLen)) !== 0) return null
  const addr = new Uint8Array(128)
  const len = new Uint32Array([addr.length])
  if (libc().getsockname(fd, ptr(addr), ptr(len)) !== 0) return null
  const view = new DataView(addr.buffer)
  const family = view.getUint16(0, true)
  const port = view.getUint16(2, false)
  const transport = type[0] === SOCK_STREAM ? 'tcp' : type[0] === SOCK_DGRAM ? 'udp' : null
  if (!transport) return null
  if (family === AF_INET) return { transport, port, address: [...addr.subarray(4, 8)].join('.') }
  if (family === AF_INET6) return { transport, port, address: ipv6Text(addr.subarray(8, 24)) }
  return null
}

/** An IPv6 address in its short form (`::`, `::1`, `fe80::1`). */
function ipv6Text(bytes: Uint8Array): string {
  const groups: number[] = []
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!)
  let best = { at: -1, len: 0 }
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > best.len && j - i > 1) best = { at: i, len: j - i }
    i = j
  }
  const hex = groups.map((g) => g.toString(16))
  if (best.at < 0) return hex.join(':')
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`
}

/** listen(2) on a bound stream socket: it takes connections into its queue again. True when it did. */
export function listenAgain(fd: number, backlog: number): boolean {
  return libc().listen(fd, backlog) === 0
}

/**
 * shutdown(2) on a listening stream socket: it stops listening (and leaves its SO_REUSEPORT
 * group), still bound. With net.ipv4.tcp_migrate_req = 1 the connections in its queue move to
 * another listener of the group instead of being reset. True when it did.
 */
export function stopListening(fd: number): boolean {
  return libc().shutdown(fd, SHUT_RD) === 0
}

/** The address of the unix socket at `path` (`@name`: the abstract namespace), and its length. */
function unixAddress(path: string): { addr: Uint8Array; len: number } {
  const name = Buffer.from(path.startsWith('@') ? `\0${path.slice(1)}` : path)
  const addr = new Uint8Array(2 + name.length + 1)
  new DataView(addr.buffer).setUint16(0, AF_UNIX, true)
  addr.set(name, 2)
  // A path name's length counts its NUL; an abstract one is exactly its bytes.
  return { addr, len: path.startsWith('@') ? 2 + name.length : addr.length }
}

/**
 * Sends `message` as one datagram to the unix socket at `path`, with descriptor `passFd` attached
 * (SCM_RIGHTS) when given. True when it was sent whole.
 */
export function sendUnixDatagram(path: string, message: string, passFd?: number): boolean {
  const { addr, len } = unixAddress(path)
  const data = Buffer.from(message)
  // struct iovec and struct msghdr (LP64: x86_64 and arm64).
  const iov = new BigUint64Array([BigInt(ptr(data)), BigInt(data.length)])
  // struct cmsghdr with one int: CMSG_LEN(4) = 20, CMSG_SPACE(4) = 24.
  const control = new Uint8Array(24)
  if (passFd !== undefined) {
    const c = new DataView(control.buffer)
    c.setBigUint64(0, 20n, true)
    c.setInt32(8, SOL_SOCKET, true)
    c.setInt32(12, SCM_RIGHTS, true)
    c.setInt32(16, passFd, true)
  }
  const msg = new DataView(new ArrayBuffer(56))
  msg.setBigUint64(0, BigInt(ptr(addr)), true)
  msg.setUint32(8, len, true)
  msg.setBigUint64(16, BigInt(ptr(iov)), true)
  msg.setBigUint64(24, 1n, true)
  if (passFd !== undefined) {
    msg.setBigUint64(32, BigInt(ptr(control)), true)
    msg.setBigUint64(40, BigInt(control.length), true)
  }
  const c = libc()
  const fd = c.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)
  if (fd < 0) return false
  try {
    return Number(c.sendmsg(fd, ptr(msg), MSG_NOSIGNAL)) === data.length
  } finally {
    c.close(fd)
  }
}

/** A pipe, both ends close-on-exec and non-blocking: [read end, write end]; null when it failed. */
export function openPipe(): [number, number] | null {
  const fds = new Int32Array(2)
  return libc().pipe2(ptr(fds), SOCK_CLOEXEC | O_NONBLOCK) === 0 ? [fds[0]!, fds[1]!] : null
}

/** True once every write end of the pipe `readFd` reads from is closed (read(2) says end of file). */
export function pipeClosed(readFd: number): boolean {
  const buf = new Uint8Array(1)
  return Number(libc().read(readFd, ptr(buf), 1)) === 0
}

/** close(2). */
export function closeFd(fd: number): void {
  libc().close(fd)
}

/** Marks `fd` close-on-exec, so that the programs Berth runs (tar, iptables) do not hold it. */
export function closeOnExec(fd: number): void {
  libc().fcntl(fd, F_SETFD, FD_CLOEXEC)
}
