import type { DatabaseSpec, DbEngine } from '../../domain/databases'
import type { DebianRecipe } from '../runtime/debian-base'
import type { DbExec } from './exec'

/** Where every database image keeps its data: the database's own volume (its disk) is mounted here. */
export const DATA_MOUNT = '/var/lib/berth-db'

/**
 * What one engine is, for the runtime (./runtime.ts) and the image build (./images.ts): its
 * Debian base, its start script, its server's settings for a memory limit, and the commands that
 * make its user, probe it, change a password, dump and restore. One file per engine implements it.
 */
export interface EngineKit {
  engine: DbEngine
  port: number
  /** debootstrap recipe of the image's base (berth/{engine}-base:bookworm-{hash}). */
  base: DebianRecipe
  baseRepo: string
  /** /usr/local/bin/berth-db-start: prepares the data folder as root, then runs the server as its own account. */
  startScript: string
  /** More files of the image (helpers), path (no leading slash) to text, mode 0755. */
  tools?: Record<string, string>
  /** The signal that stops the server quickly and cleanly (postgres: SIGINT, its fast shutdown). */
  stopSignal: string
  /** The arguments of berth-db-start: the server's settings, tuned to its memory limit. */
  command(memoryMb: number): string[]
  /** Exits 0 once the server takes the administrator's connections (in the container, no password). */
  ready(): DbExec
  /** Makes the user and the database when missing and sets the user's password to spec.password. */
  provision(spec: DatabaseSpec): DbExec
  /** A query as spec.user with its password over TCP, as a site would connect; prints the version line. */
  probe(spec: DatabaseSpec): DbExec
  /** The version from probe's output ("15.8", "10.11.6", "7.0.15"); null when it is not one. */
  versionOf(out: string): string | null
  setPassword(spec: DatabaseSpec, password: string): DbExec
  dump(spec: DatabaseSpec): DbExec
  restore(spec: DatabaseSpec): DbExec
}

/** A single-quoted SQL literal. */
export const sqlLiteral = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`

/** A name as an SQL identifier; names are checked by the domain (^[a-z][a-z0-9_]{0,30}$), checked again here. */
export function identifier(name: string): string {
  if (!/^[a-z][a-z0-9_]{0,62}$/.test(name)) throw new Error(`'${name}' is not a database or user name Berth makes`)
  return name
}

export const clamp = (n: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, Math.floor(n)))

/** The common first lines of a start script: strict, and the data folder on the mounted disk. */
export const START_HEAD = `#!/bin/bash
# berth-db-start: runs as root (no network yet matters), prepares the data folder on the
# database's disk, then becomes the server (exec) as its own unprivileged account.
set -eu
`
