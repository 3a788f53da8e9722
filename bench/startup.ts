/**
 * Start-up time and idle memory of the compiled binary. Start-up is measured from spawn to the
 * first 200 on /api/v1/status/, both on a fresh data folder (migrations and plan seeding run) and
 * on an existing one (the usual restart).
 */
import { contention, microsToTicks, readCpuTimes, type Contention } from './cpu-contention'
import { rssMb, startBerth, tempDir } from './processes'
import { median } from './stats'

export interface StartupResult {
  freshMs: number[]
  existingMs: number[]
  /** What else used the machine while the starts were timed. */
  contention: Contention
}

/** Alternates fresh and existing starts so a slow stretch of the machine hits both alike. */
export async function measureStartup(runs: number): Promise<StartupResult> {
  const existingDir = tempDir('berth-bench-existing-')
  // The first start creates the database; it also pulls the binary into the page cache.
  await timeOneStart(existingDir)
  const cpuBefore = readCpuTimes()
  const harnessBefore = process.cpuUsage()
  let childTicks = 0
  const freshMs: number[] = []
  const existingMs: number[] = []
  for (let i = 0; i < runs; i++) {
    for (const [dir, samples] of [[tempDir('berth-bench-fresh-'), freshMs], [existingDir, existingMs]] as const) {
      const start = await timeOneStart(dir)
      samples.push(start.readyMs)
      childTicks += start.cpuTicks
    }
  }
  const harness = process.cpuUsage(harnessBefore)
  const ownTicks = childTicks + microsToTicks(harness.user + harness.system)
  return { freshMs, existingMs, contention: contention(cpuBefore, readCpuTimes(), ownTicks) }
}

async function timeOneStart(dataDir: string): Promise<{ readyMs: number; cpuTicks: number }> {
  const berth = await startBerth(dataDir)
  await berth.stop()
  return { readyMs: berth.readyMs, cpuTicks: microsToTicks(Number(berth.proc.resourceUsage()?.cpuTime.total ?? 0)) }
}

/** RSS after `idleSeconds` with no requests (beyond the readiness check), as an operator would see it. */
export async function measureIdleRss(pid: number, idleSeconds: number): Promise<number> {
  await Bun.sleep(idleSeconds * 1000)
  return rssMb(pid)
}

export const startupSummary = (ms: number[]) => ({ medianMs: median(ms), maxMs: Math.max(...ms), samplesMs: ms })
