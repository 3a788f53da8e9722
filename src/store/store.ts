import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { drizzle, type BunSQLiteDatabase } from 'drizzle-orm/bun-sqlite'
import { createPrivateFile } from '../lib/private-file'
import { AREA_INDEX, AREAS, areasWrittenBy, type Area } from './areas'
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
   * A reader of the version of `areas` (store/areas.ts): a number that changes whenever a table
   * of one of them changed. This process's writes move the areas of the tables they name, once
   * their `write` ends (at once outside one). Only `berth serve` writes while it runs (the admin
   * commands ask it over its admin socket; the offline ones take the data folder's lock), so no
   * other process's write is looked for. An in-memory cache keeps one reader, of the areas it is
   * made from, and compares its answer to know when to drop what it holds.
   */
  versionOf(areas: readonly Area[]): () => number
  close(): void
}

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
  const begin = sqlite.prepare('BEGIN IMMEDIATE')
  const commit = sqlite.prepare('COMMIT')
  const rollback = sqlite.prepare('ROLLBACK')
  let depth = 0
  /** Writes per area by this process, in AREAS order, and the areas written by the open transaction. */
  const writes = Object.keys(AREAS).map(() => 0)
  let pending = 0
  const moved = (bits: number) => {
    for (let i = 0; bits !== 0; i++, bits >>>= 1) if (bits & 1) writes[i]!++
  }
  trackWrites(sqlite, (bits) => {
    if (depth > 0) pending |= bits
    else moved(bits)
  })
  const db = drizzle(sqlite, { schema })
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
        // Counted once the transaction is over: a cache filled inside it is dropped after.
        moved(pending)
        pending = 0
      }
    },
    versionOf(areas) {
      const indexes = areas.map((area) => AREA_INDEX[area])
      return () => {
        let local = 0
        for (const i of indexes) local += writes[i]!
        return local
      }
    },
    close() {
      sqlite.close()
    },
  }
}

const STATEMENT_RUNS = ['run', 'all', 'get', 'values', 'iterate'] as const

/**
 * Tells `wrote` the areas (bits, store/areas.ts) each statement that writes changes, when it
 * runs: the connection's `prepare` and `query` (drizzle prepares every query through them) hand
 * out write statements whose runs report their table's area, and `exec` and `run` report theirs.
 * A read statement is handed out untouched, so reads cost nothing more.
 */
function trackWrites(sqlite: Database, wrote: (bits: number) => void): void {
  const tracked = new WeakSet<object>()
  const track = <S extends object>(statement: S, sql: string): S => {
    const bits = areasWrittenBy(sql)
    if (bits === 0 || tracked.has(statement)) return statement
    tracked.add(statement)
    const s = statement as unknown as Record<string, (...args: unknown[]) => unknown>
    for (const name of STATEMENT_RUNS) {
      const run = s[name]!
      s[name] = (...args) => {
        const result = run.apply(statement, args)
        wrote(bits)
        return result
      }
    }
    return statement
  }
  const prepare = sqlite.prepare.bind(sqlite)
  const query = sqlite.query.bind(sqlite)
  const exec = sqlite.exec.bind(sqlite)
  const run = sqlite.run.bind(sqlite)
  Object.assign(sqlite, {
    prepare: (sql: string, ...rest: unknown[]) => track((prepare as (...a: unknown[]) => object)(sql, ...rest), sql),
    query: (sql: string) => track(query(sql), sql),
    exec: (sql: string, ...rest: unknown[]) => {
      const result = (exec as (...a: unknown[]) => unknown)(sql, ...rest)
      const bits = areasWrittenBy(sql)
      if (bits) wrote(bits)
      return result
    },
    run: (sql: string, ...rest: unknown[]) => {
      const result = (run as (...a: unknown[]) => unknown)(sql, ...rest)
      const bits = areasWrittenBy(sql)
      if (bits) wrote(bits)
      return result
    },
  })
}
