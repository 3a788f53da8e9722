import { closeOnExec, listenAgain, socketName, stopListening, type SocketName } from './libc'

/** The first descriptor systemd passes (SD_LISTEN_FDS_START). */
const FIRST_FD = 3
/** The queue a passed socket keeps while no Berth runs; berth.socket asks the same (Backlog=). */
export const PASSED_BACKLOG = 4096

/** One socket systemd passed: its descriptor and what it is bound to. */
export interface PassedSocket extends SocketName {
  fd: number
}

/**
 * The listening sockets systemd holds for Berth across restarts (berth.socket, socket
 * activation: $LISTEN_FDS, $LISTEN_PID). Bun 1.4.5 serves on no inherited descriptor, so Berth
 * serves a passed TCP socket by handing over: its own listener opens on the same address
 * (SO_REUSEPORT, one group), then the passed socket stops listening (`handOver`) and the kernel
 * moves its queued connections to Berth's (net.ipv4.tcp_migrate_req). At stop it listens again
 * (`takeBack`) before Berth's listeners close, so connections arriving until the next process
 * listens wait in its queue instead of being refused. A passed UDP socket is read directly
 * (node:dgram binds to a descriptor): queries that come meanwhile wait in its receive buffer.
 */
export class PassedSockets {
  private constructor(readonly sockets: PassedSocket[]) {}

  /** No socket: Berth not started by berth.socket (a plain `berth serve`, tests). */
  static none(): PassedSockets {
    return new PassedSockets([])
  }

  /**
   * The sockets systemd passed to this process, and $LISTEN_* taken out of `env` so that the
   * programs Berth runs do not take them for theirs (sd_listen_fds(3) with unset_environment).
   */
  static fromEnv(env: Record<string, string | undefined>, pid = process.pid): PassedSockets {
    const count = Number(env.LISTEN_FDS ?? 0)
    const forUs = Number(env.LISTEN_PID) === pid
    delete env.LISTEN_FDS
    delete env.LISTEN_PID
    delete env.LISTEN_FDNAMES
    if (!forUs || !Number.isInteger(count) || count <= 0) return PassedSockets.none()
    const sockets: PassedSocket[] = []
    for (let fd = FIRST_FD; fd < FIRST_FD + count; fd++) {
      closeOnExec(fd)
      const name = socketName(fd)
      if (name) sockets.push({ fd, ...name })
    }
    return new PassedSockets(sockets)
  }

  /** The passed socket of `transport` bound to `hostname:port`, if any. */
  find(transport: 'tcp' | 'udp', hostname: string, port: number): PassedSocket | undefined {
    return this.sockets.find((s) => s.transport === transport && s.port === port && sameAddress(s.address, hostname))
  }

  /**
   * Once Berth's own listeners are open: every passed TCP socket stops listening, its queue
   * moved to Berth's listener on the same address (one bound to an address Berth no longer
   * listens on refuses, as a closed port would). Returns the ones that would not.
   */
  handOver(): PassedSocket[] {
    return this.sockets.filter((s) => s.transport === 'tcp' && !stopListening(s.fd))
  }

  /** At stop, before Berth's listeners close: every passed TCP socket listens again. Returns the ones that would not. */
  takeBack(): PassedSocket[] {
    return this.sockets.filter((s) => s.transport === 'tcp' && !listenAgain(s.fd, PASSED_BACKLOG))
  }
}

/** True when a socket's bound address is the config's host (`0.0.0.0`, `[::]`, `::1`...). */
function sameAddress(bound: string, configured: string): boolean {
  const host = configured.replace(/^\[(.*)\]$/, '$1').toLowerCase()
  return bound === host || (host === 'localhost' && bound === '127.0.0.1')
}
