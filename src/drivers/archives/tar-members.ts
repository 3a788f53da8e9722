import { open, type FileHandle } from 'node:fs/promises'
import { UnsafeArchiveError } from './types'

/**
 * The check every archive passes before it is extracted into a site's home (replaceHome in
 * ./home-tar.ts, on this box or on a node's agent): its headers are read (no data) the way GNU
 * tar reads them, and the archive is refused, before anything is written, unless every member
 * is one tarHome could have made:
 *
 * - its name is `./` or beneath `./` (tarHome archives `.`), with no `..`, `.` or empty part:
 *   absolute names, `../x`, `logs/x` and `./logs/../../x` are refused;
 * - it is not under a name the restore keeps as it is (`logs`, Berth's own folders, `.ssh` on a
 *   rollback): such a member would be written into, or through, what the home has there;
 * - it is not under a name that an earlier member made a symbolic link (it would be written
 *   through the link);
 * - it is a regular file, folder, symbolic link, FIFO or hard link; never a device;
 * - a hard link names an earlier member of the archive (not a folder) by such a name: never a
 *   file of the host, nor one reached through a link.
 *
 * GNU tar refuses `..` and strips a leading `/` on its own; this check does not rely on it, and
 * says which member and why. Where this reader and GNU tar could read a header differently (a
 * damaged checksum, which tar skips, resyncing on the next block that looks like a header; a
 * size in a form this reader does not know; sparse or multi-volume members; global headers), the
 * archive is refused: the members this check saw are then exactly those tar extracts.
 */

const BLOCK = 512
/** The most bytes a GNU long name (`L`, `K`) or a pax header (`x`) may hold. */
const MAX_META_BYTES = 1 << 20

/** Throws UnsafeArchiveError, saying which member and why, unless every member of `file` may go into a home keeping `kept`. */
export async function checkHomeArchive(file: string, kept: ReadonlySet<string>): Promise<void> {
  const handle = await open(file, 'r')
  try {
    const members = new Members(kept)
    for await (const m of tarEntries(new Blocks(handle), HOME_RULES)) members.add(m.name, m.kind, m.link)
  } finally {
    await handle.close()
  }
}

/** Where a walk reads the archive: its 512-byte headers and the data of its name headers. */
export interface TarSource {
  /** The 512 bytes at `pos` (fewer at the end of the archive). */
  header(pos: number): Promise<Buffer>
  /** Exactly `size` bytes at `at` (the walk asks only for the data of `L`, `K` and `x` headers). */
  bytes(at: number, size: number): Promise<Buffer>
}

/** How a walk refuses (the error of its caller, its message in the caller's words) and what it calls the archive in its messages. */
export interface TarRules {
  refuse(why: string): Error
  /** e.g. "an archive of a home": "member x is a device; an archive of a home holds none". */
  noun: string
}

const HOME_RULES: TarRules = { refuse: (why) => refused(why), noun: 'an archive of a home' }

/** One member as GNU tar reads it: its name and link name (latin1, byte for byte), its kind, mode and the place and size of its data. */
export interface TarEntry {
  name: string
  kind: Kind
  link: string
  mode: number
  size: number
  dataAt: number
}

/**
 * Reads of the archive 1 MiB at a time: the headers of small files lie close together, and one
 * read per header made the check of 20,000 files take 0.6-0.8 s here (the site is frozen
 * meanwhile). A read past the window starts a new one where it is asked.
 */
class Blocks implements TarSource {
  private readonly window = Buffer.alloc(1 << 20)
  private start = 0
  private length = 0

  constructor(readonly handle: FileHandle) {}

  /** The 512 bytes at `pos` (fewer at the end of the file), valid until the next call. */
  async header(pos: number): Promise<Buffer> {
    if (pos < this.start || pos + BLOCK > this.start + this.length) {
      this.start = pos
      this.length = (await this.handle.read(this.window, 0, this.window.length, pos)).bytesRead
    }
    const at = pos - this.start
    return this.window.subarray(at, Math.min(at + BLOCK, this.length))
  }

  async bytes(at: number, size: number): Promise<Buffer> {
    const data = Buffer.alloc(size)
    const { bytesRead } = await this.handle.read(data, 0, size, at)
    if (bytesRead < size) throw refused(`it is cut short at byte ${at + bytesRead}`)
    return data
  }
}

/**
 * The members of a tar archive, as GNU tar reads its headers; refused (rules.refuse) where this
 * reader and GNU tar could read a header differently, and for devices and types tar would not
 * extract as a file, folder, link or FIFO. The caller checks the names.
 */
export async function* tarEntries(source: TarSource, rules: TarRules): AsyncGenerator<TarEntry> {
  const refuse = rules.refuse
  let longName: string | null = null
  let longLink: string | null = null
  let pax: Map<string, string> | null = null
  for (let pos = 0; ; ) {
    const header = await source.header(pos)
    const bytesRead = header.length
    // The end of the file: GNU tar fails on an archive without its end blocks, whatever it held.
    if (bytesRead === 0) return
    if (bytesRead < BLOCK) throw refuse(`it is cut short at byte ${pos}`)
    // GNU tar stops at the first zero block (it warns about a lone one, and reads no further).
    if (header.every((b) => b === 0)) return
    if (!checksumOk(header)) throw refuse(`the header at byte ${pos} is damaged (its checksum does not match)`)
    const type = String.fromCharCode(header[156])
    const size = numberOf(header, 124, 12)
    if (size === null) throw refuse(`the header at byte ${pos} has a size tar may read otherwise`)
    const dataAt = pos + BLOCK
    if (type === 'L' || type === 'K' || type === 'x') {
      if (size > MAX_META_BYTES) throw refuse(`the header at byte ${pos} holds ${size} bytes of names, more than ${MAX_META_BYTES}`)
      const data = await source.bytes(dataAt, size)
      if (type === 'x') {
        if (pax) throw refuse(`two pax headers precede the member at byte ${pos}`)
        pax = paxRecords(data, pos, refuse)
      } else if (type === 'L') {
        if (longName !== null) throw refuse(`two long names precede the member at byte ${pos}`)
        longName = cString(data, 0, data.length)
      } else {
        if (longLink !== null) throw refuse(`two long link names precede the member at byte ${pos}`)
        longLink = cString(data, 0, data.length)
      }
      pos = dataAt + roundUp(size)
      continue
    }
    const name = pax?.get('path') ?? longName ?? headerName(header)
    const link = pax?.get('linkpath') ?? longLink ?? cString(header, 157, 100)
    const paxSize = pax?.get('size')
    if (paxSize !== undefined && !/^\d{1,15}$/.test(paxSize)) throw refuse(`the pax size of ${quote(name)} is not a number`)
    const dataSize = paxSize !== undefined ? Number(paxSize) : size
    const kind = KINDS[type]
    if (kind === undefined) throw refuse(`member ${quote(name)} is of a type (${JSON.stringify(type)}) ${rules.noun} never holds`)
    if (kind === 'device') throw refuse(`member ${quote(name)} is a device; ${rules.noun} holds none`)
    if (kind !== 'file' && dataSize !== 0) throw refuse(`member ${quote(name)} is a ${kind} that carries data`)
    yield { name, kind, link, mode: numberOf(header, 100, 8) ?? 0o644, size: dataSize, dataAt }
    longName = longLink = pax = null
    pos = dataAt + roundUp(dataSize)
  }
}

export type Kind = 'file' | 'hard link' | 'symbolic link' | 'folder' | 'fifo' | 'device'

/** The types of member GNU tar extracts as such (`S`, sparse, `V`, `M`, `D`, `g`, `X` and the others are refused). */
const KINDS: Record<string, Kind> = {
  '0': 'file', '\0': 'file', '7': 'file', '1': 'hard link', '2': 'symbolic link', '3': 'device', '4': 'device', '5': 'folder', '6': 'fifo',
}

/** The members seen so far, by their names beneath `./` (`a/b` for `./a/b/`). */
class Members {
  /** Names that were a symbolic link at some point: nothing may be written beneath them. */
  private readonly links = new Set<string>()
  /** Names of earlier members a hard link may name (not folders). */
  private readonly linkable = new Set<string>()

  constructor(private readonly kept: ReadonlySet<string>) {}

  add(name: string, kind: Kind, link: string): void {
    const parts = this.partsOf(name, () => `member ${quote(name)}`)
    const path = parts.join('/')
    if (parts.length === 0 && kind !== 'folder') throw refused(`member ${quote(name)} is the home itself, and not a folder`)
    if (kind === 'hard link') {
      const target = this.partsOf(link, () => `member ${quote(name)} is a hard link to ${quote(link)}, which`).join('/')
      if (!this.linkable.has(target)) throw refused(`member ${quote(name)} is a hard link to ${quote(link)}, which is not an earlier file of the archive`)
    }
    if (kind === 'symbolic link') this.links.add(path)
    if (kind !== 'folder') this.linkable.add(path)
  }

  /** The parts of `name` beneath `./`; throws why a member (`what()`) may not be extracted into a home. */
  private partsOf(name: string, what: () => string): string[] {
    const parts = nameParts(name, what, refused, 'dot-slash')
    if (parts.length > 0 && this.kept.has(parts[0])) throw refused(`${what()} is under ${quote(`./${parts[0]}`)}, which this restore keeps as it is`)
    const through = linkAbove(parts, this.links)
    if (through !== null) throw refused(`${what()} would be written through the symbolic link ${quote(`./${through}`)}`)
    return parts
  }
}

/**
 * The rules on a member's name every archive Berth extracts follows (a home's, a source tree's):
 * no NUL, not absolute, no `..`, no empty or `.` part; `dot-slash` (a home: tarHome archives
 * `.`) wants it beneath `./`, `relative` takes `x` and `./x` alike. The parts beneath the root
 * (none for the root itself).
 */
export function nameParts(name: string, what: () => string, refuse: (why: string) => Error, root: 'dot-slash' | 'relative'): string[] {
  if (name.includes('\0')) throw refuse(`${what()} has a NUL byte in its name`)
  if (name.startsWith('/')) throw refuse(`${what()} is an absolute path`)
  const trimmed = name.replace(/\/+$/, '')
  if (trimmed.split('/').includes('..')) throw refuse(`${what()} climbs out with ".."`)
  if (trimmed === '.' || (root === 'relative' && trimmed === '')) return []
  if (root === 'dot-slash' && !trimmed.startsWith('./')) throw refuse(`${what()} is not under ./ (an archive of a home holds ./ and what is beneath it)`)
  const parts = (trimmed.startsWith('./') ? trimmed.slice(2) : trimmed).split('/')
  if (parts.some((p) => p === '' || p === '.')) throw refuse(`${what()} has an empty or "." part`)
  return parts
}

/** The first folder above the member of `parts` that is among `links` (an earlier symbolic link), as `a/b`, or null. */
export function linkAbove(parts: readonly string[], links: ReadonlySet<string>): string | null {
  let above = parts[0]
  for (let i = 1; i < parts.length; above += `/${parts[i++]}`) {
    if (links.has(above)) return above
  }
  return null
}

function refused(why: string): UnsafeArchiveError {
  return new UnsafeArchiveError(`The archive was refused and nothing was written to the home: ${why}.`)
}

/** A name as it reads (names are bytes; they are kept as latin1 to compare them byte for byte). */
export function quote(name: string): string {
  return JSON.stringify(Buffer.from(name, 'latin1').toString('utf8'))
}

/**
 * The header's name as GNU tar reads it: `name`, NUL-terminated within its 100 bytes, after the
 * ustar `prefix` and a `/` when the magic is POSIX's `ustar\0` (GNU's `ustar  ` has no prefix).
 */
const POSIX_MAGIC = Buffer.from('ustar\0', 'latin1')

function headerName(h: Buffer): string {
  const name = cString(h, 0, 100)
  const posix = h.subarray(257, 263).equals(POSIX_MAGIC)
  const prefix = posix ? cString(h, 345, 155) : ''
  return prefix ? `${prefix}/${name}` : name
}

function cString(b: Buffer, at: number, len: number): string {
  const field = b.subarray(at, at + len)
  const end = field.indexOf(0)
  return field.subarray(0, end === -1 ? field.length : end).toString('latin1')
}

/** GNU tar accepts the unsigned sum of the header's bytes (the checksum field as spaces) or, for old archives, the signed one. */
function checksumOk(h: Buffer): boolean {
  const stored = numberOf(h, 148, 8, true)
  if (stored === null) return false
  // One pass over the bytes: their sum, and how many are over 127 (each counts 256 less signed).
  let unsigned = 0
  let high = 0
  for (let i = 0; i < BLOCK; i++) {
    const b = h[i]
    unsigned += b
    high += b >> 7
  }
  for (let i = 148; i < 156; i++) {
    const b = h[i]
    unsigned += 0x20 - b
    high -= b >> 7
  }
  return stored === unsigned || stored === unsigned - 256 * high
}

/**
 * A numeric field: octal (leading spaces, then digits, then a NUL, a space or the field's end),
 * or GNU's base-256 (a first byte of 0x80, positive). Anything else is null: tar's reading of it
 * may differ from this one.
 */
function numberOf(h: Buffer, at: number, len: number, octalOnly = false): number | null {
  const field = h.subarray(at, at + len)
  if (field[0] === 0x80 && !octalOnly) {
    let n = 0
    for (let i = 1; i < len; i++) n = n * 256 + field[i]
    return Number.isSafeInteger(n) ? n : null
  }
  const match = /^ *([0-7]+)(?:[\0 ]|$)/.exec(field.toString('latin1'))
  return match ? parseInt(match[1], 8) : null
}

/** A pax header's records, `LEN KEY=VALUE\n` each; sparse and dump-dir records are refused. */
function paxRecords(data: Buffer, pos: number, refuse: (why: string) => Error): Map<string, string> {
  const records = new Map<string, string>()
  for (let at = 0; at < data.length; ) {
    const space = data.indexOf(0x20, at)
    const len = space === -1 ? NaN : Number(data.subarray(at, space).toString('latin1'))
    if (!Number.isSafeInteger(len) || len <= space - at || at + len > data.length || data[at + len - 1] !== 0x0a) throw refuse(`the pax header at byte ${pos} is malformed`)
    const record = data.subarray(space + 1, at + len - 1).toString('latin1')
    const eq = record.indexOf('=')
    if (eq <= 0) throw refuse(`the pax header at byte ${pos} is malformed`)
    const key = record.slice(0, eq)
    if (key.startsWith('GNU.sparse') || key.startsWith('GNU.dumpdir') || key.startsWith('GNU.volume')) throw refuse(`the pax header at byte ${pos} describes a sparse, dump or multi-volume member`)
    records.set(key, record.slice(eq + 1))
    at += len
  }
  return records
}

const roundUp = (n: number) => Math.ceil(n / BLOCK) * BLOCK
