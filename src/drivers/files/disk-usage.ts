import { closeSync, constants, fstatSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { openHome, openSubfolder } from './resolver'
import { fdPath, statxAt, SyscallError, type EntryStat } from './syscalls'

export interface DiskUsage {
  /** Bytes allocated on disk (like `du -s`, hard links counted once). */
  bytes: number
  /** False when the walk stopped at its entry or time bound: `bytes` is then a lower bound. */
  complete: boolean
}

export interface DiskUsageLimits {
  maxEntries: number
  maxMs: number
  /** Folders deeper than this are not entered (one descriptor is open per level). */
  maxDepth: number
}

const DEFAULT_LIMITS: DiskUsageLimits = { maxEntries: 200_000, maxMs: 5_000, maxDepth: 64 }

/** Entries measured between two yields to the event loop, so a big home does not stall the edge. */
const BATCH = 500

/**
 * What a site's home takes on disk, walked from the host with the files driver's resolver
 * (src/drivers/files/resolver.ts), never following a symlink: each entry is measured with
 * statx(AT_SYMLINK_NOFOLLOW) in the folder already open (a symlink counts its own blocks, never
 * its target's), and each folder is entered with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 * relative to its parent's descriptor, so a tenant swapping a folder for a symlink mid-walk
 * cannot make it count the host's files. Names are handled as raw bytes (they need not be UTF-8).
 * Folder listings are read off the event loop, and the walk yields every BATCH entries.
 */
export async function measureDiskUsage(root: string, limits: Partial<DiskUsageLimits> = {}): Promise<DiskUsage> {
  const { maxEntries, maxMs, maxDepth } = { ...DEFAULT_LIMITS, ...limits }
  const deadline = performance.now() + maxMs
  const seen = new Set<bigint>()
  let bytes = 0
  let entries = 0
  let complete = true
  const walk = async (dirfd: number, depth: number): Promise<void> => {
    let names: Buffer[]
    try {
      names = (await readdir(fdPath(dirfd), { encoding: 'buffer' })) as Buffer[]
    } catch {
      return
    }
    for (const name of names) {
      if (++entries > maxEntries || performance.now() > deadline) {
        complete = false
        return
      }
      if (entries % BATCH === 0) await new Promise((done) => setImmediate(done))
      let st: EntryStat
      try {
        st = statxAt(dirfd, name)
      } catch (err) {
        // Removed since the listing (ENOENT): nothing to count.
        if (err instanceof SyscallError) continue
        throw err
      }
      const isDir = (st.mode & constants.S_IFMT) === constants.S_IFDIR
      if (!isDir && st.nlink > 1) {
        if (seen.has(st.ino)) continue
        seen.add(st.ino)
      }
      bytes += st.blocks * 512
      if (!isDir) continue
      if (depth >= maxDepth) {
        complete = false
        continue
      }
      const child = openSubfolder(dirfd, name)
      if (child === null) continue
      try {
        await walk(child, depth + 1)
      } finally {
        closeSync(child)
      }
      if (!complete) return
    }
  }
  const home = openHome(root)
  try {
    bytes += fstatSync(home).blocks * 512
    await walk(home, 0)
  } finally {
    closeSync(home)
  }
  return { bytes, complete }
}
