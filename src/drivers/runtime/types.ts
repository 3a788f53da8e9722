import type { HostingType } from '../../core/enums'

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
  prepareSite(site: Pick<SiteSpec, 'siteId' | 'slug'>): Promise<void>
  /** The site's container as the engine sees it, or null when there is none. */
  inspectSite(slug: string): Promise<SiteRuntimeState | null>
  /** Stops the site's container; its files and network stay. */
  stopSite(slug: string): Promise<void>
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
   * site is not "not running"); the command's run holds nothing up.
   */
  exec(slug: string, cmd: string[], opts?: { timeoutMs?: number; maxOutputBytes?: number }): Promise<ExecResult>
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

export class RuntimeUnavailableError extends Error {}
