import type { HostingType } from '../../core/enums'

/** The site user's home in every site's container, on the site's volume; the web root is `public/` inside it. */
export const SITE_HOME = '/home/site'

/** Everything the runtime needs to run one site; derived from the site and its plan. */
export interface SiteSpec {
  siteId: string
  slug: string
  hostingType: HostingType
  /** Image to run, e.g. `berth/static:1` or `berth/php:1`. */
  image: string
  memoryMb: number
  cpuCores: number
  /** Maximum number of processes in the container. */
  pidsLimit: number
  diskGb: number
  /** Host port published for the site's sshd (vps and dedicated), or null for no SSH. */
  sshPort: number | null
}

/** What a site's disk is made from: its filesystem holds `diskGb` GiB (its plan's `disk_gb`). */
export type SiteDiskSpec = Pick<SiteSpec, 'siteId' | 'slug' | 'diskGb'>

/** A site's disk as its filesystem reports it (statfs), in bytes. */
export interface SiteDisk {
  /** The plan's `disk_gb` in bytes (GiB): what the site may use. */
  limitBytes: number
  /** What its files (and the filesystem's own records of them) take. */
  usedBytes: number
  /** What it can still write before "no space". */
  availableBytes: number
}

/** A disk cannot shrink below what its files use: the figures, for the 409. */
export class DiskTooSmallError extends Error {
  constructor(readonly usedBytes: number, readonly wantedBytes: number, message: string) {
    super(message)
    this.name = 'DiskTooSmallError'
  }
}

/** Where the edge proxy reaches a running site. */
export interface SiteEndpoint {
  containerId: string
  /** Address of the container on its own network, reachable from the host. */
  address: string
  /** Port the site's web server listens on inside the container. */
  port: number
}

export interface SiteRuntimeState {
  containerId: string
  /** The container runs; a site frozen for an archive (paused) runs too, and answers once thawed. */
  running: boolean
  endpoint: SiteEndpoint | null
  image: string
}

/** A container labelled as this Berth instance's, as found in the engine. */
export interface ManagedContainer {
  containerId: string
  name: string
  siteId: string
  slug: string
  running: boolean
}

/**
 * The container runtime: one container, one volume and one network per site.
 *
 * Contracts, for every implementation:
 * - Every method is idempotent: ensuring a running site returns its endpoint and changes
 *   nothing; stopping a stopped site and removing a removed one are no-ops.
 * - Containers, volumes and networks carry labels naming the Berth instance and the site, so
 *   that two Berth instances sharing one engine never touch each other's sites.
 * - A site's files live on its volume: recreating the container keeps them.
 * - Errors from the engine being down are thrown as RuntimeUnavailableError.
 */
export interface ContainerRuntime {
  /** True when the engine answers. */
  ping(): Promise<boolean>
  /**
   * Creates whatever is missing of the site's network, volume and container, starts the
   * container and returns where it answers. A container whose image or limits differ from
   * `spec` is recreated (files kept). Throws when the image is missing (`berth images build`),
   * leaving a container that already runs as it is.
   */
  ensureSite(spec: SiteSpec): Promise<SiteEndpoint>
  /**
   * Creates the site's network and volume ahead of its container, so that `ensureSite` after
   * payment has only the container to make (issue 3: ~100 ms off the purchase). Idempotent;
   * `removeSite` undoes it.
   */
  prepareSite(site: SiteDiskSpec): Promise<void>
  /**
   * The site's disk: the size of its filesystem (its plan's `disk_gb`) and what its files use,
   * in bytes; null when the site has no volume yet.
   */
  siteDisk(slug: string): Promise<SiteDisk | null>
  /**
   * Brings the site's disk to `diskGb`: a bigger size online, files and container kept; a
   * smaller one with the container stopped for the resize and started again. Throws
   * DiskTooSmallError (nothing changed) when its files use more than the new size holds.
   */
  resizeSiteDisk(site: SiteDiskSpec): Promise<void>
  /**
   * Calls `listener` after each network this runtime made on the engine: the site firewall's
   * backstop goes back on top of FORWARD then (an engine before Docker 28 inserts each new
   * network's rules there). Optional: runtimes that make no host bridge have none.
   */
  onNetworkCreated?(listener: () => void): void
  /** The site's container as the engine sees it, or null when there is none. */
  inspectSite(slug: string): Promise<SiteRuntimeState | null>
  /**
   * Stops the site's container; its files and network stay. With `forRestart` the caller runs
   * it again at once (ensureSite, as a restore does): a runtime may then stop only the container
   * and leave what would start it again (a cluster stops the task's container on its node and
   * Swarm replaces it, sparing a service update's stop and scheduling, seconds).
   */
  stopSite(slug: string, opts?: { forRestart?: boolean }): Promise<void>
  /** Removes the site's container and network, and its volume (files) when `volume` is true. */
  removeSite(slug: string, opts: { volume: boolean }): Promise<void>
  /** Every container labelled as this instance's, running or not. */
  listManaged(): Promise<ManagedContainer[]>
  /**
   * Stops a container found in the engine that the store does not know (by id); a missing one
   * is a no-op. Throws for a container not labelled as this instance's: it is another's to stop.
   */
  quarantine(containerId: string): Promise<void>
  /**
   * The host folder holding the site's home (its volume), for Berth's own file, log and archive
   * work: reading and writing there costs no engine call. Throws SiteNotRunnableError when the
   * site has no volume. Berth must run as root to open it.
   */
  homePath(slug: string): Promise<string>
  /**
   * Runs `cmd` in the site's running container as the site user (uid 1000), with no TTY, and
   * returns its exit code and combined output (at most `maxOutputBytes`, default 64 KiB, the
   * rest dropped). Killed after `timeoutMs` (default 60 s), exit code 137 then. Throws
   * SiteNotRunnableError when the container is not running. While the site is frozen
   * (`withSitePaused`) or another call changes it, the start waits for that to end (a frozen
   * site is not "not running"); the command's run holds nothing up. `opts.stdin`, `onOutput` and
   * `signal`: see ExecOptions.
   */
  exec(slug: string, cmd: string[], opts?: ExecOptions): Promise<ExecResult>
  /**
   * Runs one command of the exec API (`POST /sites/{slug}/exec/`) in the site's running
   * container as the site user (uid 1000, never root), in `spec.cwd`, with `spec.env` added and
   * `spec.stdin` as its input (then closed). stdout and stderr are kept apart, each to its last
   * `spec.keepBytes` bytes. The command runs in a process group of its own; at `timeoutMs` that
   * whole group is killed (nothing it started is left running) and the answer says `timedOut`.
   * Starts as `exec` does (waits out a freeze; SiteNotRunnableError when not running); its
   * processes run in the container's cgroup, so they count against the plan's CPU and memory.
   */
  runCommand(slug: string, spec: CommandSpec): Promise<CommandResult>
  /**
   * Starts `spec.argv` with a pseudo-terminal in the site's running container (the engine's exec
   * with a TTY: a real PTY, job control and `stty size` work), as the site user or, for the
   * admin's `berth sites shell --user root` only, root. Starts as `exec` does. The session ends
   * when the process ends or `close()` is called, which kills it and what it started.
   */
  openTerminal(slug: string, spec: TerminalSpec): Promise<Terminal>
  /**
   * Runs `fn` with the site's processes frozen (cgroup freezer), so that what it reads of the
   * site's files is one consistent moment; always thaws, even when `fn` throws. A stopped site
   * runs `fn` as it is. While `fn` runs, the runtime's other calls that change this site
   * (ensureSite from the reconciler included) and the start of an `exec` wait, so nothing thaws
   * or starts the site under `fn`; `fn` must therefore not await them for this site itself (it
   * would wait for itself).
   */
  withSitePaused<T>(slug: string, fn: () => Promise<T>): Promise<T>
  /** Current CPU (percent of one core) and memory of the running container, or null. */
  stats(slug: string): Promise<SiteStats | null>
  /**
   * Reports what happens to this instance's site containers as it happens (started, died,
   * stopped, killed, out of memory, removed), whoever caused it. When the runtime lost track for
   * a while (the engine restarted or stopped answering, however the connection failed, silently
   * included), `onReconnect` runs once it follows again: compare everything. `onReachable`
   * hears whether the engine answers, at the first check and whenever that changes.
   */
  watch(handlers: SiteWatchHandlers): SiteWatch
}

export interface SiteWatchHandlers {
  onEvent(e: SiteEvent): void
  /** The same for a site's database containers (issue 40: role `database`, its name in `database`). */
  onDatabaseEvent?(e: SiteEvent & { database: string }): void
  onReconnect(): void
  onReachable?(reachable: boolean): void
}

export type SiteEventAction = 'start' | 'die' | 'stop' | 'kill' | 'oom' | 'destroy'

/** Something that happened to a site's container. */
export interface SiteEvent {
  action: SiteEventAction
  slug: string
  siteId: string
  /** The container it happened to: an event of a container since replaced is stale. */
  containerId: string
}

export interface SiteWatch {
  close(): void
}

/** One command of the exec API (see ContainerRuntime.runCommand). */
export interface CommandSpec {
  /** The program and its arguments; a command given as one string arrives as ['sh', '-c', it]. */
  argv: string[]
  /** Absolute path inside the container to start in; the caller resolved it beneath the home. */
  cwd: string
  /** Variables added to the image's environment (names already checked by the caller). */
  env: Record<string, string>
  /**
   * Written to the command's standard input, which is then closed; absent: an empty input. A
   * stream is written as the engine takes it (an archive into a release), never held whole.
   */
  stdin?: Uint8Array | AsyncIterable<Uint8Array>
  /** The command and everything it started are killed this long after the start. */
  timeoutMs: number
  /** Each of stdout and stderr keeps its last this-many bytes; the rest is dropped. */
  keepBytes: number
}

export interface CommandResult {
  /** The command's exit code; 137 (128 + SIGKILL, as a shell reports it) when killed at its timeout. */
  exitCode: number
  stdout: Uint8Array
  stderr: Uint8Array
  /** True when stdout or stderr lost its beginning to `keepBytes`. */
  truncated: boolean
  /** True when the command was still running at its timeout and was killed. */
  timedOut: boolean
  /** From the start of the command to its end, in milliseconds. */
  durationMs: number
}

/** A process with a pseudo-terminal (see ContainerRuntime.openTerminal). */
export interface TerminalSpec {
  argv: string[]
  /**
   * 'site': uid 1000, what every door of the API gets; 'root': the admin on the box only, with
   * HOME=/root (not the site's home) and ENV empty, so that no file of the tenant's is read as root's.
   */
  user: 'site' | 'root'
  /** Absolute path inside the container to start in. */
  cwd: string
  env?: Record<string, string>
  cols: number
  rows: number
}

export interface Terminal {
  /** Hears every piece of the terminal's output, in order; set it before writing. */
  onData(listener: (bytes: Uint8Array) => void): void
  /**
   * Sends bytes to the terminal, as typed keys. False when the engine's stream is not taking
   * input as fast as it comes (the process is not reading): the bytes are kept, counted in
   * `pendingInput`, and `onWritable` hears when they went; a caller stops sending meanwhile or
   * bounds what it lets wait (the console ends a session past CONSOLE_LIMITS.inputBytes).
   */
  write(bytes: Uint8Array | string): boolean
  /** Bytes written and not yet taken by the engine's stream. */
  readonly pendingInput: number
  /** Hears each time the input that waited has gone to the engine (after a `write` answered false). */
  onWritable(listener: () => void): void
  /**
   * Stops handing output over until `resume()`: for a reader that cannot keep up (a WebSocket
   * with a full send buffer). The engine's stream then fills, and the process blocks writing to
   * its terminal, as under a slow ssh link; nothing is lost.
   */
  pause(): void
  resume(): void
  /** Changes the terminal's size (the process gets SIGWINCH). */
  resize(cols: number, rows: number): Promise<void>
  /** The process's exit code once it ended; null when it was closed or the engine could not say. */
  readonly exited: Promise<number | null>
  /** Ends the session: the process and what it started are killed. Idempotent. */
  close(): Promise<void>
}

/** Options of ContainerRuntime.exec. */
export interface ExecOptions {
  /** Killed after this long (default 60 s); exit code 137 then. */
  timeoutMs?: number
  /** The output kept in the answer (default 64 KiB); `onOutput` hears all of it. */
  maxOutputBytes?: number
  /** Written to the command's input, which is then closed (unless `signal`). */
  stdin?: Uint8Array | string
  /** Hears the output (stdout and stderr, as text) as it comes, for a command that keeps running. */
  onOutput?: (chunk: string) => void
  /**
   * Keeps the command's input open until it aborts, then closes it: a command that reads its
   * input to the end (berth-supervise watch) ends then.
   */
  signal?: AbortSignal
  /** Variables added to the image's environment (a deploy hook's: the site's settings, issue 39). */
  env?: Record<string, string>
}

export interface ExecResult {
  exitCode: number
  output: string
}

export interface SiteStats {
  /** Percent of one core over the engine's last sampling interval (may exceed 100 on several). */
  cpuPercent: number
  memoryBytes: number
  memoryLimitBytes: number
}

/**
 * The host port asked for the site's sshd is taken by something else on the host (another
 * program, or another Berth sharing the engine). The caller gives the site another port.
 */
export class HostPortTakenError extends Error {
  constructor(readonly port: number, message: string) {
    super(message)
  }
}

/** The site's container or volume is missing or not running, so the operation cannot run now. */
export class SiteNotRunnableError extends Error {}

/**
 * The site's container is restarting: its main process exited and the engine starts it again
 * (restart policy), after a wait that doubles from 0.1 s up to a minute while it keeps exiting.
 */
export class SiteRestartingError extends SiteNotRunnableError {
  /** When a caller should try again, in seconds. */
  static readonly RETRY_AFTER_S = 10

  constructor(readonly slug: string) {
    super(`The site '${slug}' is restarting: its container's main process exited and the engine starts it again, waiting longer each time it exits (up to a minute).`)
  }
}

export class RuntimeUnavailableError extends Error {}
