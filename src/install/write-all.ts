import { closeSync, copyFileSync, chmodSync, fsyncSync, lstatSync, mkdirSync, openSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

/** A folder `berth install` makes (with its parents), and the mode it must have. */
export interface PlannedDir {
  path: string
  mode: number
  /** Also set the mode of a folder that already exists. */
  enforceMode?: boolean
}

/** A file `berth install` writes: text, or a copy of another file (the executable). */
export interface PlannedFile {
  path: string
  mode: number
  content: string | { copyOf: string }
}

/** Why an install changed nothing. */
export class InstallError extends Error {}

/**
 * Writes every file of `files` or none, so that a failed `berth install` leaves the previous
 * installation as it was (an upgrade that died half-way used to leave a new unit beside the old
 * binary):
 * 1. checks, changing nothing: no target is a folder, no folder on the way is a file;
 * 2. creates the missing folders and writes each file to a temporary name beside its target
 *    (same folder, so a full disk or a read-only file system fails here); on any failure the
 *    temporary files and the folders made are removed again;
 * 3. renames each temporary file over its target. A rename replaces even an executable that is
 *    running (its old inode lives until the process exits), where writing into it fails with
 *    ETXTBSY: `berth install` can upgrade the binary while the service runs.
 */
export function writeAllOrNothing(dirs: PlannedDir[], files: PlannedFile[]): void {
  for (const d of dirs) checkFolderPath(d.path)
  for (const f of files) {
    checkFolderPath(dirname(f.path))
    const st = lstatOrNull(f.path)
    if (st?.isDirectory()) throw new InstallError(`${f.path} is a folder; remove it and run berth install again (nothing was changed).`)
  }
  const made: string[] = []
  const staged: { temp: string; path: string }[] = []
  try {
    for (const d of dirs) {
      const first = mkdirSync(d.path, { recursive: true, mode: d.mode })
      if (first) made.push(...foldersBetween(first, d.path))
    }
    for (const f of files) {
      const temp = join(dirname(f.path), `.${basenameOf(f.path)}.berth-install-${process.pid}`)
      staged.push({ temp, path: f.path })
      stage(temp, f)
    }
  } catch (err) {
    for (const s of staged) rmSync(s.temp, { force: true })
    for (const dir of made.reverse()) {
      try {
        rmdirSync(dir)
      } catch {
        // not empty: something else wrote there meanwhile; leave it
      }
    }
    const e = err as NodeJS.ErrnoException
    throw new InstallError(`cannot write ${e.path ?? 'a file'} (${e.code ?? e.message}); nothing was changed.${e.code === 'EACCES' || e.code === 'EPERM' ? ' Run berth install as root.' : ''}`)
  }
  for (const d of dirs) if (d.enforceMode || made.includes(d.path)) chmodSync(d.path, d.mode)
  for (const s of staged) renameSync(s.temp, s.path)
}

/** Writes `f` to `temp` with its mode, flushed to disk before it is renamed into place. */
function stage(temp: string, f: PlannedFile): void {
  if (typeof f.content === 'string') writeFileSync(temp, f.content, { mode: f.mode })
  else copyFileSync(f.content.copyOf, temp)
  chmodSync(temp, f.mode)
  const fd = openSync(temp, 'r')
  try {
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/** Throws InstallError when something on the way to `dir` exists and is not a folder. */
function checkFolderPath(dir: string): void {
  for (let p = dir; ; p = dirname(p)) {
    const st = lstatOrNull(p)
    if (st && !(st.isDirectory() || (st.isSymbolicLink() && statOrNull(p)?.isDirectory()))) {
      throw new InstallError(`${p} is not a folder; berth install needs a folder there (nothing was changed).`)
    }
    if (st || dirname(p) === p) return
  }
}

/** The folders from `first` (the outermost one mkdir made) down to `last`, outermost first. */
function foldersBetween(first: string, last: string): string[] {
  const out: string[] = []
  for (let p = last; p.length >= first.length; p = dirname(p)) {
    out.unshift(p)
    if (p === first || dirname(p) === p) break
  }
  return out
}

const basenameOf = (path: string) => path.slice(path.lastIndexOf('/') + 1)
const lstatOrNull = (path: string) => {
  try {
    return lstatSync(path)
  } catch {
    return null
  }
}
const statOrNull = (path: string) => {
  try {
    return statSync(path)
  } catch {
    return null
  }
}
