import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { basename } from 'node:path'
import type { PortHolder, PortState } from './types'

/**
 * Whether `port` on `hostname` is taken, by a probe bind (closed at once), and when it is, who
 * holds it: the sockets of this network namespace bound to that port (/proc/net/{tcp,tcp6} in
 * LISTEN, /proc/net/{udp,udp6} in any state), matched by inode to the processes whose
 * /proc/{pid}/fd link to them. A holder in another namespace, or one whose fds this user cannot
 * read, leaves `holders` empty. An address that is not on this box throws (EADDRNOTAVAIL).
 */
export async function portState(protocol: 'tcp' | 'udp', hostname: string, port: number): Promise<PortState> {
  const free = protocol === 'tcp' ? tcpPortFree(hostname, port) : await udpPortFree(hostname, port)
  if (free) return { taken: false }
  return { taken: true, holders: holdersOf(socketInodes(protocol, port)) }
}

function tcpPortFree(hostname: string, port: number): boolean {
  try {
    Bun.listen({ hostname, port, socket: { data() {} } }).stop(true)
    return true
  } catch (err) {
    if ((err as { code?: string }).code === 'EADDRINUSE') return false
    throw new Error(`cannot bind ${hostname}:${port}/tcp: ${(err as { code?: string }).code ?? (err as Error).message}`)
  }
}

async function udpPortFree(hostname: string, port: number): Promise<boolean> {
  try {
    const socket = await Bun.udpSocket({ hostname, port })
    socket.close()
    return true
  } catch (err) {
    if ((err as { code?: string }).code === 'EADDRINUSE') return false
    throw new Error(`cannot bind ${hostname}:${port}/udp: ${(err as { code?: string }).code ?? (err as Error).message}`)
  }
}

/** TCP's LISTEN state in /proc/net/tcp (include/net/tcp_states.h). */
const TCP_LISTEN = '0A'

/** Inodes of the sockets bound to `port` in this network namespace. */
function socketInodes(protocol: 'tcp' | 'udp', port: number): Set<string> {
  const inodes = new Set<string>()
  for (const table of [`/proc/net/${protocol}`, `/proc/net/${protocol}6`]) {
    let text: string
    try {
      text = readFileSync(table, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/)
      if (fields.length < 10) continue
      const localPort = Number.parseInt(fields[1]!.split(':')[1] ?? '', 16)
      if (localPort !== port || (protocol === 'tcp' && fields[3] !== TCP_LISTEN)) continue
      if (fields[9] !== '0') inodes.add(fields[9]!)
    }
  }
  return inodes
}

/** The processes with an fd on one of `inodes`, each once. */
function holdersOf(inodes: Set<string>): PortHolder[] {
  if (inodes.size === 0) return []
  const holders: PortHolder[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let fds: string[]
    try {
      fds = readdirSync(`/proc/${entry}/fd`)
    } catch {
      continue
    }
    const holds = fds.some((fd) => {
      try {
        const link = readlinkSync(`/proc/${entry}/fd/${fd}`)
        return link.startsWith('socket:[') && inodes.has(link.slice(8, -1))
      } catch {
        return false
      }
    })
    if (holds) holders.push({ pid: Number(entry), command: commandOf(entry) })
  }
  return holders
}

/** The executable's file name (a replaced binary reads `berth (deleted)`: the suffix goes), else comm. */
function commandOf(pid: string): string {
  try {
    return basename(readlinkSync(`/proc/${pid}/exe`)).replace(/ \(deleted\)$/, '')
  } catch {
    try {
      return readFileSync(`/proc/${pid}/comm`, 'utf8').trim()
    } catch {
      return '?'
    }
  }
}
