import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { createPrivateFile } from '../lib/private-file'
import * as schema from './schema'

export type Db = BunSQLiteDatabase<typeof schema>

/**
 * The SQLite store: one connection per process, WAL, synchronous=FULL so an acknowledged write
 * survives `kill -9` and power loss, and every write in BEGIN IMMEDIATE (design.md, Durability).
 */
export interface Store {
  readonly sqlite: Database
  readonly db: Db
  readonly path: string
  /**
   * Runs `fn` in one BEGIN IMMEDIATE transaction: all of its effects or none. Synchronous on
   * purpose: nothing else can interleave on this connection while it runs.
   */
  write<T>(fn: () => T): T
  /**
   * A number that changes whenever the store changed: at once for writes by this process through
   * `write`, within EXTERNAL_CHECK_MS for another process's (a `berth` admin command), as SQLite's
   * `PRAGMA data_version` reports. In-memory caches compare it to know when to drop what they hold.
   */
  version(): number
  /**
   * The part of `version()` that moves with other processes' writes only (within
   * EXTERNAL_CHECK_MS): for a cache of rows that this process changes through one repository only,
   * which counts its own changes (the plan catalog), so that other writes leave it be.
   */
  externalVersion(): number
  close(): void
}

/** How stale a cache may be about writes made by another process. */
export const EXTERNAL_CHECK_MS = 250

/**
 * Opens the store at `path`, creating it (its folder 0750) if needed. The file is made 0600
 * before SQLite opens it, so that it and its -wal and -shm files (which SQLite gives the same
 * mode) are private whatever the umask: it holds the portal's signing secret and every key's hash.
 */
export function openStore(path: string): Store {
  if (path !== ':memory:') {
    mkdirSync(dirname(path), { recursive: true, mode: 0o750 })
    createPrivateFile(path)
  }
  const sqlite = new Database(path, { create: true, strict: true })
  sqlite.exec('PRAGMA journal_mode = WAL')
  sqlite.exec('PRAGMA synchronous = FULL')
  sqlite.exec('PRAGMA busy_timeout = 5000')
  sqlite.exec('PRAGMA foreign_keys = ON')
  const db = drizzle(sqlite, { schema })
  const dataVersion = sqlite.prepare<{ data_version: number }, []>('PRAGMA data_version')
  let localWrites = 0
  let externalVersion = dataVersion.get()!.data_version
  let checkedAt = 0
  const begin = sqlite.prepare('BEGIN IMMEDIATE')
  const commit = sqlite.prepare('COMMIT')
  const rollback = sqlite.prepare('ROLLBACK')
  let depth = 0
  return {
    sqlite,
    db,
    path,
    write<T>(fn: () => T): T {
      // Nested calls join the outer transaction, so services can compose repository writes.
      if (depth > 0) return fn()
      begin.run()
      depth++
      try {
        const result = fn()
        commit.run()
        return result
      } catch (err) {
        rollback.run()
        throw err
      } finally {
        depth--
        localWrites++
      }
    },
    version() {
      // Writes by this process count at once.
      return this.externalVersion() * 2 ** 21 + localWrites
    },
    externalVersion() {
      // Another process's writes (a `berth` admin command) are looked for at most every
      // EXTERNAL_CHECK_MS: reading data_version on every request was 22-41% of the CPU of the
      // hottest routes (bench/, issue 2).
      const now = performance.now()
      if (now - checkedAt >= EXTERNAL_CHECK_MS) {
        externalVersion = dataVersion.get()!.data_version
        checkedAt = now
      }
      return externalVersion
    },
    close() {
      sqlite.close()
    },
  }
}
