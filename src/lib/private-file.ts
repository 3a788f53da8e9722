import { chmodSync, closeSync, fchmodSync, fsyncSync, openSync, readdirSync, renameSync, statSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/** The mode of every file holding a secret: read and write for Berth's user, nothing for others. */
export const PRIVATE_MODE = 0o600

/**
 * Writes `content` to `file` readable by Berth's user only (0600), whole or not at all: a temporary
 * file renamed over the old one, so a crash never leaves half a key or half a state file. The mode
 * is set on the open file, so neither the umask nor a temporary file left by a crash widens it.
 */
export function writePrivateFile(file: string, content: string): void {
  const temporary = `${file}.${process.pid}.tmp`
  const fd = openSync(temporary, 'w', PRIVATE_MODE)
  try {
    fchmodSync(fd, PRIVATE_MODE)
    writeSync(fd, content)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temporary, file)
}

/**
 * Creates `file` empty and 0600 unless it exists (an existing file is left as it is). For a
 * SQLite database before SQLite opens it: SQLite gives its -wal and -shm files the database
 * file's own mode, whatever the umask (os_unix.c, findCreateFileMode and robust_open), so
 * they are private too. SQLite would create the file 0644 less the umask.
 */
export function createPrivateFile(file: string): void {
  let fd: number
  try {
    fd = openSync(file, 'wx', PRIVATE_MODE)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return
    throw err
  }
  try {
    fchmodSync(fd, PRIVATE_MODE)
  } finally {
    closeSync(fd)
  }
}

/** A file holding secrets that was open to others than its owner, and what became of it. */
export interface WidenedFile {
  file: string
  /** Its permission bits as found, e.g. `0644`. */
  was: string
  /** Set to 0600; false when that failed (`error` says why, the hoster runs `chmod 600 file`). */
  fixed: boolean
  error?: string
}

/**
 * Sets each of `files` that exists and that its group or others may read, write or run back to
 * 0600, and reports each such file. Files that do not exist are skipped; links are followed (a
 * store moved elsewhere and linked back is checked where it lives).
 */
export function tightenPrivateFiles(files: readonly string[]): WidenedFile[] {
  const widened: WidenedFile[] = []
  for (const file of files) {
    let mode: number
    try {
      mode = statSync(file).mode & 0o7777
    } catch {
      continue
    }
    if ((mode & 0o077) === 0) continue
    const was = mode.toString(8).padStart(4, '0')
    try {
      chmodSync(file, PRIVATE_MODE)
      widened.push({ file, was, fixed: true })
    } catch (err) {
      widened.push({ file, was, fixed: false, error: (err as NodeJS.ErrnoException).code ?? (err as Error).message })
    }
  }
  return widened
}

/** The regular files directly in `dir` (none when it does not exist), as full paths. */
export function filesIn(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(dir, e.name))
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw err
  }
}
