export type DbEngine = 'postgres' | 'mariadb' | 'redis'          // also exported from core/enums as DbEngineSchema/DB_ENGINES
export interface DatabaseSpec {
  siteId: string; slug: string; name: string; engine: DbEngine
  memoryMb: number; cpuCores: number; diskGb: number
  user: string; password: string       // 'site' and the opened password
}
export interface DatabaseRunning { host: string; port: number; version: string }
export interface DatabaseState { running: boolean; containerId: string; sizeBytes: number | null }
export interface DatabaseRuntime {
  /** Makes what is missing (volume with a disk of diskGb via SiteDisks, container on the site's
   *  network with alias db-{name}, limits, config tuned to memoryMb), starts it, waits until it
   *  answers a query as `user` (bounded: throws DatabaseStartError with the server's own last log
   *  lines), returns where it answers. Idempotent; a container whose limits differ is recreated,
   *  data kept. The site's network must exist (the runtime's prepareSite makes it). */
  ensure(spec: DatabaseSpec): Promise<DatabaseRunning>
  inspect(slug: string, name: string): Promise<DatabaseState | null>
  stop(slug: string, name: string): Promise<void>
  /** Removes the container; the volume too when `volume`. Missing: no-op. */
  remove(slug: string, name: string, opts: { volume: boolean }): Promise<void>
  /** Changes the password of `spec.user` in the running server to `password`, data kept. */
  setPassword(spec: DatabaseSpec, password: string): Promise<void>
  /** A consistent dump in the engine's own format (pg_dump -Fc, mariadb-dump --single-transaction
   *  --routines --events, redis RDB) written to `to`; resolves when complete; rejects (and the
   *  caller discards the file) on any failure. */
  dump(spec: DatabaseSpec, to: NodeJS.WritableStream): Promise<{ bytes: number }>
  /** Replaces the database's data with a dump of `dump`'s format. */
  restore(spec: DatabaseSpec, from: NodeJS.ReadableStream): Promise<void>
  /**
   * The newest `tail` lines the server wrote to its container's output (its log: starts, stops,
   * errors, refused logins), oldest first; null when the database has no container.
   */
  logs(slug: string, name: string, tail: number): Promise<string[] | null>
  /** Every database container labelled as this instance's (for reconcile, wave 2). */
  listManaged(): Promise<Array<{ slug: string; name: string; engine: DbEngine; running: boolean }>>
  /**
   * The same runtime on one node of a cluster, whatever node the site is placed on now (a move
   * dumps on the node it leaves and restores on its target: docs/cluster.md "Databases on
   * nodes"). Absent on a single box, where everything runs on its one engine.
   */
  onNode?(nodeId: string): DatabaseRuntime
}
