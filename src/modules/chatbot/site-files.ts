/**
 * Which of a site's pages the chatbot's index (site-index.ts) reads, and reading them, over the
 * site's read-only reader (drivers/files/site-reader.ts): nothing outside the site's `public/` is
 * ever read, as the reader follows no link anywhere in a path (a folder swapped for a link between
 * the walk and the read makes the read find nothing), opens nothing but regular files, and reads
 * at most the size cap.
 */
import { extname } from 'node:path'
import type { SiteReader } from '../../drivers/files/site-reader'
import { extractPage } from './page-text'

/** Files larger than this are not indexed. */
export const MAX_FILE_BYTES = 1024 * 1024
/** Indexable files per site at most; the first in walking order win. */
export const MAX_FILES = 20_000
/** Directory entries looked at per sync, indexable or not: bounds the walk of a huge tree. */
const MAX_ENTRIES = 200_000
const MAX_DEPTH = 64
const INDEXED = new Set(['.html', '.htm', '.md', '.txt'])
/** The folder indexed, under the site's home. */
const ROOT = 'public'

/** A file found by the walk; `rel` is relative to public/. */
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

/**
 * The indexable files under public/, breadth first in name order (the same files win the cap on
 * every sync, shallow pages first). Links, dot-entries and anything but files and folders are
 * passed over without being followed; a public/ that is missing, a link or no folder is an empty site.
 */
export async function listFiles(files: SiteReader): Promise<{ files: FileEntry[]; skipped: number }> {
  const found: FileEntry[] = []
  let skipped = 0
  let seen = 0
  const dirs: [string, number][] = [['', 0]]
  for (let d = 0; d < dirs.length && seen < MAX_ENTRIES; d++) {
    const [dir, depth] = dirs[d]!
    // A folder gone or swapped for a link since its parent was listed is null: not listed.
    const entries = (await files.list(dir ? `${ROOT}/${dir}` : ROOT, MAX_ENTRIES - seen))?.filter((e) => !e.name.startsWith('.'))
    if (!entries) continue
    seen += entries.length
    for (const entry of entries) {
      const rel = dir ? `${dir}/${entry.name}` : entry.name
      if (entry.type === 'dir') {
        if (depth < MAX_DEPTH) dirs.push([rel, depth + 1])
      } else if (entry.type === 'file' && INDEXED.has(extname(rel).toLowerCase())) {
        if (entry.size > MAX_FILE_BYTES || found.length >= MAX_FILES) skipped++
        else found.push({ rel, size: entry.size, mtimeMs: entry.mtimeMs })
      }
    }
  }
  return { files: found, skipped }
}

/** The page in `entry`, or null when it cannot be read safely (gone, a link, not a regular file, too big). */
export async function readPage(files: SiteReader, entry: FileEntry, maxPassages: number): Promise<ReadPage | null> {
  const content = await files.read(`${ROOT}/${entry.rel}`, MAX_FILE_BYTES)
  if (content === null || content.truncated) return null
  return { rel: entry.rel, size: content.size, mtimeMs: content.mtimeMs, ...extractPage(entry.rel, content.data, maxPassages) }
}
