import { existsSync, statfsSync } from 'node:fs'
import { dirname } from 'node:path'

/**
 * Free bytes for an unprivileged writer and the size of the filesystem holding `dir` (statfs),
 * or of its nearest existing ancestor when `dir` is not made yet.
 */
export function diskSpaceOf(dir: string): { freeBytes: number; totalBytes: number } {
  let at = dir
  while (!existsSync(at) && dirname(at) !== at) at = dirname(at)
  const s = statfsSync(at)
  return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize }
}
