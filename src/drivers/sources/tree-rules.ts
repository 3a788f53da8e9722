import { linkAbove, nameParts, quote } from '../archives/tar-members'
import { SourceTooLargeError, TooManyFilesError, UnsafeSourceError } from './errors'

/**
 * The rules on the members of a source tree (an uploaded archive, gzip tar or zip), on top of the
 * name rules every archive Berth extracts follows (drivers/archives/tar-members.ts `nameParts`,
 * shared with a home's check: no absolute name, no `..`, no empty or `.` part, nothing written
 * beneath an earlier symbolic link):
 *
 * - a member is a file, a folder, a symbolic link or a hard link; never a device, FIFO or socket;
 * - a hard link names an earlier file of the archive, by a name that follows the same rules;
 * - a symbolic link's target, followed the way the kernel would (through the archive's other
 *   links, `..` by `..`), stays inside the tree: never absolute, never above the tree's root;
 * - at most `maxFiles` members, at most `maxBytes` bytes of file data.
 *
 * A tree whose every member lies beneath one folder (GitHub's `repo-main/`, `git archive
 * --prefix=app/`) is that folder's content: the folder is stripped (`strip`).
 */
export type SourceKind = 'file' | 'folder' | 'symbolic link' | 'hard link'

export interface PlannedMember {
  /** The name as the archive gave it (latin1, byte for byte), for messages. */
  name: string
  parts: string[]
  kind: SourceKind
  /** A symbolic link's target as given; a hard link's target as parts joined by `/`. */
  link: string
  mode: number
  size: number
}

export const MAX_LINK_HOPS = 40

/** How a format's reader takes part in the two passes. */
export interface MemberReader {
  /** Pass 1: every member into `members` (checked there), no data expanded but a link's target. */
  scan(members: SourceMembers): Promise<void>
  /** Pass 2: the data of the archive's files in their order, each through `onFile`. */
  copyFiles(onFile: (size: number, chunks: AsyncIterable<Uint8Array>) => Promise<void>): Promise<void>
  close(): Promise<void>
}


export class SourceMembers {
  readonly members: PlannedMember[] = []
  bytes = 0
  private readonly links = new Set<string>()
  private readonly linkable = new Set<string>()

  constructor(private readonly limits: { maxBytes: number; maxFiles: number }) {}

  /** Checks and records one member; `kind` as the archive says it (a device, FIFO or socket is refused here). */
  add(name: string, kind: SourceKind | 'fifo' | 'device' | 'socket', link: string, mode: number, size: number): void {
    const what = () => `member ${quote(name)}`
    if (kind === 'fifo' || kind === 'device' || kind === 'socket') throw unsafe(name, `${what()} is a ${kind === 'fifo' ? 'FIFO' : kind}; a source tree holds only files, folders and links`)
    const parts = this.partsOf(name, what)
    if (parts.length === 0) {
      if (kind !== 'folder') throw unsafe(name, `${what()} is the tree's root itself, and not a folder`)
      return
    }
    if (this.members.length + 1 > this.limits.maxFiles) throw new TooManyFilesError(this.limits.maxFiles, shown(name))
    const path = parts.join('/')
    let target = link
    if (kind === 'hard link') {
      target = this.partsOf(link, () => `${what()} is a hard link to ${quote(link)}, which`).join('/')
      if (!this.linkable.has(target)) throw unsafe(name, `${what()} is a hard link to ${quote(link)}, which is not an earlier file of the archive`)
    }
    if (kind === 'symbolic link') {
      if (link === '' || link.includes('\0')) throw unsafe(name, `${what()} is a symbolic link with an empty or unreadable target`)
      if (link.startsWith('/')) throw unsafe(name, `${what()} is a symbolic link to the absolute path ${quote(link)}, outside the tree`)
      this.links.add(path)
    }
    if (kind === 'file') {
      this.bytes += size
      if (this.bytes > this.limits.maxBytes) throw new SourceTooLargeError(this.limits.maxBytes, this.bytes, shown(name))
    }
    if (kind === 'file' || kind === 'hard link') this.linkable.add(path)
    this.members.push({ name, parts, kind, link: target, mode, size: kind === 'file' ? size : 0 })
  }

  /**
   * Once every member is in: the folder to strip (its name) or null, after which every symbolic
   * link is followed (with the folder stripped) and refused if it leaves the tree.
   */
  finish(): string | null {
    const tops = new Set(this.members.map((m) => m.parts[0]))
    const [top] = tops
    const strip = tops.size === 1 && this.members.some((m) => m.parts.length > 1) &&
      this.members.every((m) => m.parts.length > 1 || m.kind === 'folder') ? top : null
    if (strip !== null) {
      for (const m of this.members) {
        m.parts = m.parts.slice(1)
        if (m.kind === 'hard link') m.link = m.link.split('/').slice(1).join('/')
      }
      this.members.splice(0, this.members.length, ...this.members.filter((m) => m.parts.length > 0))
    }
    const links = new Map<string, string>()
    for (const m of this.members) if (m.kind === 'symbolic link') links.set(m.parts.join('/'), m.link)
    for (const m of this.members) {
      if (m.kind !== 'symbolic link') continue
      const why = escapeOf(m.parts.slice(0, -1), m.link, links)
      if (why) throw unsafe(m.name, `member ${quote(m.name)} is a symbolic link to ${quote(m.link)}, which ${why}`)
    }
    return strip
  }

  private partsOf(name: string, what: () => string): string[] {
    const parts = nameParts(name, what, (why) => unsafe(name, why), 'relative')
    const through = linkAbove(parts, this.links)
    if (through !== null) throw unsafe(name, `${what()} would be written through the symbolic link ${quote(through)}`)
    return parts
  }
}

/**
 * Follows `target` from the folder `dir` (parts beneath the root) as the kernel would, through
 * the tree's `links`; why it leaves the tree, or null when it stays inside.
 */
function escapeOf(dir: string[], target: string, links: ReadonlyMap<string, string>): string | null {
  let hops = 0
  const walk = (from: readonly string[], path: string): { at: string[] } | { why: string } => {
    if (path.startsWith('/')) return { why: `leads to the absolute path ${quote(path)}, outside the tree` }
    let at = [...from]
    for (const part of path.split('/')) {
      if (part === '' || part === '.') continue
      if (part === '..') {
        if (at.length === 0) return { why: 'leads above the tree' }
        at.pop()
        continue
      }
      at.push(part)
      const next = links.get(at.join('/'))
      if (next === undefined) continue
      if (++hops > MAX_LINK_HOPS) return { why: `goes through more than ${MAX_LINK_HOPS} links` }
      const followed = walk(at.slice(0, -1), next)
      if ('why' in followed) return followed
      at = followed.at
    }
    return { at }
  }
  const walked = walk(dir, target)
  return 'why' in walked ? walked.why : null
}

function unsafe(member: string, why: string): UnsafeSourceError {
  return new UnsafeSourceError(shown(member), why)
}

/** A member's name (bytes kept as latin1) as text, for the errors' `member`. */
export function shown(name: string): string {
  return Buffer.from(name, 'latin1').toString('utf8')
}
