import { constants, type Stats } from 'node:fs'
import { FileError } from './errors'
import { display } from './resolver'
import type { EntryStat } from './syscalls'

/**
 * A home's files as the files API shows them (home.ts): the entry read off a stat, and the
 * FileErrors for a name that holds the wrong kind of entry or content.
 */

export type EntryType = 'file' | 'dir' | 'symlink' | 'other'

/** One file or folder as the API shows it. */
export interface FileEntry {
  name: string
  /** Relative to the home, with `/` separators; '' is the home itself. */
  path: string
  /** `other`: a FIFO, socket or device node, which the API lists but never opens. */
  type: EntryType
  size: number
  modified_at: string
  /** Permission bits in octal, e.g. `0644`. */
  mode: string
}

const TYPES: Record<number, EntryType> = { [constants.S_IFREG]: 'file', [constants.S_IFDIR]: 'dir', [constants.S_IFLNK]: 'symlink' }

export function entryOf(names: string[], st: Pick<EntryStat, 'mode' | 'size' | 'mtimeMs'>): FileEntry {
  return {
    name: names.at(-1) ?? '',
    path: names.join('/'),
    type: TYPES[st.mode & constants.S_IFMT] ?? 'other',
    size: st.size,
    modified_at: new Date(st.mtimeMs).toISOString(),
    mode: (st.mode & 0o7777).toString(8).padStart(4, '0'),
  }
}

export function notAFile(names: string[], st: Stats): FileError {
  if (st.isDirectory()) return new FileError('wrong_type', `'${display(names)}' is a folder, not a file`, { op: 'list', path: display(names) })
  return new FileError('wrong_type', `'${display(names)}' is not a regular file (a FIFO, socket or device); the files API only opens regular files and folders.`)
}

export const tooLarge = (names: string[], size: number, max: number) =>
  new FileError('too_large', `'${display(names)}' is ${size} bytes; reads return at most ${max} bytes. Fetch it from the site instead.`)

export const notText = (names: string[], why: string) =>
  new FileError('not_text', `'${display(names)}' ${why}, so it is not text; only UTF-8 text files can be read through the API.`)
