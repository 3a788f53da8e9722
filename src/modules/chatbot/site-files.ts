/**
 * Reading a site's pages for the chatbot's index (site-index.ts), safely: the files belong to the
 * customer, who can change them while Berth reads them. Nothing outside the site's `public/` is
 * ever read: links are never followed (lstat while walking, O_NOFOLLOW when opening), and each
 * opened file's real path (/proc/self/fd) must lie under public/'s, so a directory swapped for a
 * link between the walk and the read is caught on the open file itself (the symlink-escape
 * advisories of pterodactyl/wings, style.md).
 */
import { constants } from 'node:fs'
import { lstat, open, readdir, readlink, realpath } from 'node:fs/promises'
import { extname, join, sep } from 'node:path'
import { extractPage } from './page-text'

/** Files larger than this are not indexed. */
export const MAX_FILE_BYTES = 1024 * 1024
/** Indexable files per site at most; the first in walking order win. */
export const MAX_FILES = 20_000
/** Directory entries looked at per sync, indexable or not: bounds the walk of a huge tree. */
const MAX_ENTRIES = 200_000
const MAX_DEPTH = 64
const INDEXED = new Set(['.html', '.htm', '.md', '.txt'])

/** A file found by the walk. */
export interface FileEntry {
  rel: string
  size: number
  mtimeMs: number
}

/** A file read, with its page's URL, title and passages. */
export interface ReadPage extends FileEntry {
  url: string
  title: string
  passages: string[]
}

/** publicDir's real path, or null when it is missing, a link or not a directory. */
export async function resolveRoot(publicDir: string): Promise<string | null> {
  try {
    if (!(await lstat(publicDir)).isDirectory()) return null
    return await realpath(publicDir)
  } catch (err) {
    if (hasCode(err, 'ENOENT', 'ENOTDIR')) return null
    throw err
  }
}

/**
 * The indexable files under `root`, breadth first in name order (the same files win the cap on
 * every sync, shallow pages first). Links, dot-entries and anything but files and directories are
 * passed over without being followed.
 */
export async function listFiles(root: string): Promise<{ files: FileEntry[]; skipped: number }> {
  const files: FileEntry[] = []
  let skipped = 0
  let seen = 0
  const dirs: [string, number][] = [['', 0]]
  for (let d = 0; d < dirs.length && seen < MAX_ENTRIES; d++) {
    const [dir, depth] = dirs[d]!
    let names: string[]
    try {
      // A folder swapped for a link since its lstat is not listed (reads are checked anyway).
      if (dir && !isInside(root, await realpath(join(root, dir)))) continue
      names = (await readdir(join(root, dir))).filter((n) => !n.startsWith('.')).sort()
    } catch (err) {
      if (hasCode(err, 'ENOENT', 'ENOTDIR', 'EACCES', 'ELOOP')) continue
      throw err
    }
    names = names.slice(0, MAX_ENTRIES - seen)
    seen += names.length
    for (let k = 0; k < names.length; k += 64) {
      const chunk = names.slice(k, k + 64).map((name) => (dir ? `${dir}/${name}` : name))
      const stats = await Promise.all(chunk.map((rel) => lstat(join(root, rel)).catch((err) => {
        if (hasCode(err, 'ENOENT', 'ENOTDIR', 'EACCES')) return null
        throw err
      })))
      for (const [j, st] of stats.entries()) {
        const rel = chunk[j]!
        if (st === null) continue
        if (st.isDirectory()) {
          if (depth < MAX_DEPTH) dirs.push([rel, depth + 1])
        } else if (st.isFile() && INDEXED.has(extname(rel).toLowerCase())) {
          if (st.size > MAX_FILE_BYTES || files.length >= MAX_FILES) skipped++
          else files.push({ rel, size: st.size, mtimeMs: st.mtimeMs })
        }
      }
    }
  }
  return { files, skipped }
}

/** The page in `entry`, or null when it cannot be read safely (gone, a link, outside root, too big). */
export async function readPage(root: string, entry: FileEntry, maxPassages: number): Promise<ReadPage | null> {
  const path = join(root, entry.rel)
  let handle
  try {
    // O_NONBLOCK: a FIFO swapped in for the file fails the checks below instead of blocking.
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  } catch (err) {
    if (hasCode(err, 'ENOENT', 'ENOTDIR', 'ELOOP', 'EMLINK', 'EACCES', 'EPERM', 'ENXIO', 'EISDIR')) return null
    throw err
  }
  try {
    const st = await handle.stat()
    if (!st.isFile() || st.size > MAX_FILE_BYTES || !(await isUnder(root, handle.fd, path))) return null
    const buffer = Buffer.alloc(st.size)
    let length = 0
    while (length < st.size) {
      const { bytesRead } = await handle.read(buffer, length, st.size - length, length)
      if (bytesRead === 0) break
      length += bytesRead
    }
    return { rel: entry.rel, size: st.size, mtimeMs: st.mtimeMs, ...extractPage(entry.rel, buffer.subarray(0, length), maxPassages) }
  } finally {
    await handle.close()
  }
}

/** Whether the open file `fd` really lies under `root`, whatever links its path went through. */
async function isUnder(root: string, fd: number, path: string): Promise<boolean> {
  let real: string
  try {
    real = await readlink(`/proc/self/fd/${fd}`)
  } catch (err) {
    if (!hasCode(err, 'ENOENT')) throw err
    real = await realpath(path) // no /proc (not Linux): checked on the path, racy but still a check
  }
  return isInside(root, real)
}

function isInside(root: string, real: string): boolean {
  return real.startsWith(root.endsWith(sep) ? root : root + sep)
}

function hasCode(err: unknown, ...codes: string[]): boolean {
  return typeof err === 'object' && err !== null && codes.includes((err as { code?: string }).code ?? '')
}
