import { closeFd, openPipe, pipeClosed, sendUnixDatagram } from './libc'

/** How long `barrier` waits for systemd to have read the notifications sent before it. */
const BARRIER_MS = 5_000

/**
 * Berth's side of sd_notify(3), written here rather than linked: one datagram per state to the
 * unix socket systemd names in $NOTIFY_SOCKET (the unit is Type=notify). READY=1 once the
 * listeners listen, so `systemctl start` and `restart` return when Berth serves; WATCHDOG=1 from
 * the event loop at half of WatchdogSec=, so a loop that hangs stops the pings and systemd
 * restarts Berth; STOPPING=1 when the drain begins. Outside systemd (no $NOTIFY_SOCKET) every
 * call does nothing.
 */
export class SystemdNotifier {
  private watchdog: ReturnType<typeof setInterval> | null = null

  private constructor(
    private readonly socket: string | null,
    /** How often systemd expects WATCHDOG=1, in ms; null when the unit sets no WatchdogSec=. */
    readonly watchdogMs: number | null,
  ) {}

  /** From $NOTIFY_SOCKET and $WATCHDOG_USEC (and $WATCHDOG_PID), taken out of `env` for the programs Berth runs. */
  static fromEnv(env: Record<string, string | undefined>, pid = process.pid): SystemdNotifier {
    const socket = env.NOTIFY_SOCKET || null
    const usec = Number(env.WATCHDOG_USEC)
    const forUs = env.WATCHDOG_PID === undefined || Number(env.WATCHDOG_PID) === pid
    delete env.NOTIFY_SOCKET
    delete env.WATCHDOG_USEC
    delete env.WATCHDOG_PID
    return new SystemdNotifier(socket, socket && forUs && Number.isFinite(usec) && usec > 0 ? usec / 1000 : null)
  }

  /** True when a service manager listens for the notifications. */
  get enabled(): boolean {
    return this.socket !== null
  }

  /** Sends `state` lines (`READY=1`, `STATUS=...`); false when there is no manager or it failed. */
  notify(...state: string[]): boolean {
    return this.socket !== null && sendUnixDatagram(this.socket, state.join('\n'))
  }

  /**
   * Resolves once systemd has acted on every notification sent before (sd_notify_barrier(3):
   * BARRIER=1 with a pipe's write end, which systemd closes once it got there), or after
   * BARRIER_MS. True when systemd confirmed; at once, true, without a manager.
   */
  async barrier(): Promise<boolean> {
    if (this.socket === null) return true
    const pipe = openPipe()
    if (!pipe) return false
    const [readEnd, writeEnd] = pipe
    const sent = sendUnixDatagram(this.socket, 'BARRIER=1', writeEnd)
    closeFd(writeEnd)
    try {
      if (!sent) return false
      for (const deadline = Date.now() + BARRIER_MS; Date.now() < deadline; await Bun.sleep(5)) {
        if (pipeClosed(readEnd)) return true
      }
      return false
    } finally {
      closeFd(readEnd)
    }
  }

  /** READY=1, and the watchdog's pings from now on. */
  ready(status: string): void {
    this.notify('READY=1', `STATUS=${status}`)
    if (this.watchdogMs !== null && !this.watchdog) {
      this.watchdog = setInterval(() => this.notify('WATCHDOG=1'), Math.max(100, this.watchdogMs / 2))
    }
  }

  /** STOPPING=1: the drain has begun (systemd shows `deactivating`). The pings go on until `stopped`. */
  stopping(status: string): void {
    this.notify('STOPPING=1', `STATUS=${status}`)
  }

  /** No more pings (the process is about to exit). */
  stopped(): void {
    if (this.watchdog) clearInterval(this.watchdog)
    this.watchdog = null
  }
}
