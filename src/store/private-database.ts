import { Database } from 'bun:sqlite'
import { mkdirSync, rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { createPrivateFile } from '../lib/private-file'

/**
 * Opens (creating it, and its folders, 0700) a SQLite file of Berth's own data folder that only
 * Berth's user may read: the file is made 0600 before SQLite opens it, so that its -wal and -shm
 * files, which copy its mode, are private too. For derived data kept beside the store, such as
 * the chatbot's per-site indexes (src/modules, which may not touch the filesystem themselves).
 */
export function openPrivateDatabase(file: string): Database {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 })
  createPrivateFile(file)
  return new Database(file, { create: true, strict: true })
}

/** Deletes a SQLite file and its journal, WAL and shared-memory files; missing ones are no error. */
export function removeDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(file + suffix, { force: true })
}
