/** The process's own resource use, as Prometheus's client libraries export it (`process_*`). */
export interface ProcessStats {
  /** User and system CPU time, seconds. */
  cpuSeconds: number
  residentMemoryBytes: number
  /** Open file descriptors; null where /proc is not there to count them. */
  openFds: number | null
  /** When the process started, seconds since the epoch. */
  startTimeSeconds: number
}
