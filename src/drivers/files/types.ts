import type { FileEntry } from './entries'

/** Owner of everything the API writes. */
export interface FileOwner {
  uid: number
  gid: number
}

/** The `site` user and group of every site image (SITE_USER in runtime/site-container.ts). */
export const SITE_OWNER: FileOwner = { uid: 1000, gid: 1000 }

/**
 * A file opened for reading by `Home.openForReading`: what the readers of the site's logs use
 * (domain/logs/tail.ts). node:fs's FileHandle is one (a home on this box); so is the agent's
 * answer for a home on another node (drivers/files/remote-home.ts), which reads by ranges.
 */
export interface ReadHandle {
  /** The file's size now. */
  stat(): Promise<{ size: number }>
  /** Up to `length` bytes at `position` into `buffer` at `offset`; 0 past the end. */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>
  close(): Promise<void>
}

/**
 * A site's home, opened for the files API, exec's `cwd`, the logs and the edge's access log. The
 * contract is SiteHome's (drivers/files/home.ts: its doc says what each operation guarantees and
 * which FileError it throws); a home on this box answers at once, a home on another node of a
 * cluster through that node's agent (drivers/files/remote-home.ts), so callers await every answer.
 * Both throw the same errors for the same cause.
 */
export interface Home {
  close(): void
  list(path: string, maxEntries: number): MaybePromise<{ path: string; entries: FileEntry[]; truncated: boolean }>
  folder(path: string): MaybePromise<string>
  read(path: string, maxBytes: number): MaybePromise<FileEntry & { content: string }>
  openForReading(path: string): Promise<ReadHandle>
  write(path: string, data: Uint8Array): MaybePromise<FileEntry & { created: boolean }>
  append(path: string, data: Uint8Array): MaybePromise<void>
  mkdir(path: string): MaybePromise<FileEntry & { created: boolean }>
  remove(path: string): Promise<{ path: string; type: 'file' | 'dir'; removed: number }>
  /** Rotates a log by renaming (drivers/files/rotate.ts); false when `path` is not a regular file. */
  rotate(path: string, keep: number): MaybePromise<boolean>
}

export type MaybePromise<T> = T | Promise<T>

/**
 * Opens the home at `hostPath` (a site's volume, from `ContainerRuntime.homePath`) for the files
 * API's reads and writes, writing as `owner`. Throws (ENOENT) when the folder does not exist. The
 * caller awaits it, and closes it. The driver is `openSiteHome` of ./home.ts on one box, and
 * drivers/cluster/node-homes.ts's in a cluster (which sends a `node:` path to its node's agent).
 */
export type OpenHome = (hostPath: string, owner: FileOwner) => MaybePromise<Home>
