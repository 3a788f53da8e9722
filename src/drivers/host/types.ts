/**
 * What `berth doctor` asks of the box it runs on (src/cli/doctor/): the data folder, the Docker
 * engine, the listeners' ports, the ACME server, the system resolver, systemd and the off-box
 * destination. drivers/host/probes.ts answers them for real; the checks only judge the answers,
 * so a test can hand them a box in any state.
 *
 * Contracts, for every implementation: a method throws only when it could not ask at all (the
 * engine is not there, the server does not answer); its Error's message says why, in words a
 * hoster can act on.
 */
export interface BoxProbes {
  /** Milliseconds since the epoch, by the clock Berth works by. */
  now(): number
  /** Writes, syncs and removes a small file in `dir`; resolves when that worked. Throws with the reason (EROFS, EACCES, ENOENT ...). */
  writeProbe(dir: string): Promise<void>
  /** The nearest folder that exists, from `dir` up: where the data folder will be made when it is missing. */
  existingAncestor(dir: string): string
  /** Free bytes for an unprivileged writer and the size of the filesystem holding `dir`. */
  diskSpace(dir: string): { freeBytes: number; totalBytes: number }
  /** Which of the commands `names` are not on the host (looked up in the system's sbin and bin folders). */
  missingCommands(names: string[]): string[]
  /** Whether the kernel hands out loop devices (/dev/loop-control). */
  loopDevices(): boolean
  /** The engine's version; throws when it does not answer. */
  engineVersion(): Promise<{ version: string; apiVersion: string }>
  /** Which of `images` the engine does not hold. */
  missingImages(images: string[]): Promise<string[]>
  /** Whether something holds `port` on `hostname` for `protocol`, and which processes (empty when unknown). */
  portState(protocol: 'tcp' | 'udp', hostname: string, port: number): Promise<PortState>
  /** GET of the ACME directory: its status, its Date header (ms, null without one) and its JSON body (null when not JSON). */
  fetchDirectory(url: string, caBundle: string | null): Promise<{ status: number; dateMs: number | null; body: unknown }>
  /** The system resolver's NS names for `name`; [] when the name has none. Throws when the resolver cannot answer. */
  resolveNs(name: string): Promise<string[]>
  /** The system resolver's addresses of `name` (A and AAAA); [] when it has none. */
  resolveAddresses(name: string): Promise<string[]>
  /** What `systemctl is-enabled UNIT` prints (enabled, disabled, not-found ...), or null without systemctl. */
  unitState(unit: string): Promise<string | null>
  /** Puts, reads back and deletes a small object at the off-box destination; throws with the reason. */
  offsiteProbe(): Promise<void>
}

export type PortState = { taken: false } | { taken: true; holders: PortHolder[] }

/** A process holding a socket, read from /proc. */
export interface PortHolder {
  pid: number
  /** The executable's file name (`berth`, `nginx`, `docker-proxy`), or its comm when the link is unreadable. */
  command: string
}
