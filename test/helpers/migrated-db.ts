import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { inject } from 'vitest'
import type { TestProject } from 'vitest/node'
import { migrate } from '../../src/store/migrate'
import { openStore } from '../../src/store/store'

/**
 * A database with every migration applied, made once per run (vitest's globalSetup, below) and
 * copied for each test's store: the migrations are 19 transactions, each synced to disk
 * (synchronous=FULL), about 140 ms a store on the 2-core machines, and the unit tier makes some
 * 200 stores. `migrate(store)` on the copy finds every migration applied; the migrations
 * themselves run in src/store/migrate.test.ts.
 */
declare module 'vitest' {
  export interface ProvidedContext {
    migratedDatabase: string
  }
}

/** Puts the migrated database at `path` (0600, as openStore makes it), unless a file is there or its folder is not. */
export function placeMigratedDatabase(path: string): void {
  if (existsSync(path) || !existsSync(dirname(path))) return
  copyFileSync(inject('migratedDatabase'), path)
}

/** vitest.config.ts's globalSetup: makes the database, and removes it after the run. */
export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'berth-migrated-'))
  const file = join(dir, 'berth.db')
  const store = openStore(file)
  migrate(store)
  // Everything in the main file, no -wal beside it: a copy of the one file is the whole database.
  store.sqlite.exec('PRAGMA wal_checkpoint(TRUNCATE)')
  store.close()
  project.provide('migratedDatabase', file)
  return () => rmSync(dir, { recursive: true, force: true })
}
