import { readdirSync } from 'node:fs'
import type { ProcessStats } from './types'

/**
 * Reads this process's CPU, memory and open files. The start time is taken once, when the
 * process's uptime is first asked, so that it does not drift with the clock.
 *
 * @example
 * const read = processStatsReader()
 * read().residentMemoryBytes // 61_440_000
 */
export function processStatsReader(): () => ProcessStats {
  const startTimeSeconds = Math.round((Date.now() / 1000 - process.uptime()) * 1000) / 1000
  return () => {
    const cpu = process.cpuUsage()
    return {
      cpuSeconds: (cpu.user + cpu.system) / 1e6,
      residentMemoryBytes: process.memoryUsage.rss(),
      openFds: countOpenFds(),
      startTimeSeconds,
    }
  }
}

/** The entries of /proc/self/fd, less the one the listing itself holds open. */
function countOpenFds(): number | null {
  try {
    return readdirSync('/proc/self/fd').length - 1
  } catch {
    return null
  }
}
