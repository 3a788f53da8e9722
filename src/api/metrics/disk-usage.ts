import { promises as fs } from 'node:fs'
import type { FileHandle } from 'node:fs/promises'
import { beneath, openDirIn, openRoot } from '../../lib/open-beneath'

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

/**
 * What a folder tree takes on disk, walked from the host without following symlinks (a symlink
 * counts its own size, never its target's): each folder is opened with O_NOFOLLOW through its
 * parent's descriptor (open-beneath.ts), so a tenant swapping a folder for a symlink mid-walk
 * cannot make it count the host's files. Asynchronous, so a large home does not stall the edge.
 */
export async function measureDiskUsage(root: string, limits: Partial<DiskUsageLimits> = {}): Promise<DiskUsage> {
  const { maxEntries, maxMs, maxDepth } = { ...DEFAULT_LIMITS, ...limits }
  const deadline = performance.now() + maxMs
  const seen = new Set<number>()
  let bytes = 0
  let entries = 0
  let complete = true
  const walk = async (dir: FileHandle, depth: number): Promise<void> => {
    bytes += ((await dir.stat()).blocks ?? 0) * 512
    let names: { name: string; isDir: boolean }[]
    try {
      names = (await fs.readdir(beneath(dir, ''), { withFileTypes: true })).map((d) => ({ name: d.name, isDir: d.isDirectory() }))
    } catch {
      return
    }
    for (const { name, isDir } of names) {
      if (++entries > maxEntries || performance.now() > deadline) {
        complete = false
        return
      }
      if (isDir) {
        if (depth >= maxDepth) {
          complete = false
          continue
        }
        const child = await openDirIn(dir, name).catch(() => null)
        if (!child) continue
        try {
          await walk(child, depth + 1)
        } finally {
          await child.close()
        }
        if (!complete) return
        continue
      }
      const st = await fs.lstat(beneath(dir, name)).catch(() => null)
      if (!st) continue
      if (st.nlink > 1) {
        if (seen.has(st.ino)) continue
        seen.add(st.ino)
      }
      bytes += st.blocks * 512
    }
  }
  const top = await openRoot(root)
  try {
    await walk(top, 0)
  } finally {
    await top.close()
  }
  return { bytes, complete }
}
