/**
 * How much of the machine was not ours during a measurement. The benchmark machines are shared:
 * other processes in this VM (other engineers' tests and load generators) and the hypervisor
 * (steal time) take CPU from the server under test. Both are recorded with each measured run, so
 * a reader can tell a slow figure from a busy machine.
 */
import { readFileSync, readdirSync } from 'node:fs'

/** Aggregate counters from /proc/stat, in USER_HZ ticks. */
export interface CpuTimes {
  total: number
  /** Everything but idle, iowait and steal. */
  busy: number
  steal: number
}

export interface Contention {
  /** Share of all CPU time the hypervisor gave to other VMs. */
  stealPercent: number
  /** Share of all CPU time used by processes other than the server and wrk. */
  otherPercent: number
}

/** USER_HZ: the unit of /proc/stat and /proc/PID/stat; 100 on every Linux build that matters. */
const TICKS_PER_SECOND = 100

export function readCpuTimes(): CpuTimes | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!
    // cpu user nice system idle iowait irq softirq steal guest guest_nice; guest time is already
    // inside user and nice, so the first eight fields make up the total.
    const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1, 9).map(Number) as number[]
    const busy = user! + nice! + system! + irq! + softirq!
    return { total: busy + idle! + iowait! + steal!, busy, steal: steal! }
  } catch {
    return undefined
  }
}

/** CPU time (user + system) of a running process, in ticks; 0 once it is gone. */
export function processTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // The command name (field 2) may contain spaces; fields after its closing parenthesis are fixed.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}

/** CPU time of a running process and all its descendants (nginx's workers under its master), in ticks. */
export function treeTicks(pid: number): number {
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)])
    } catch {
      // gone meanwhile
    }
  }
  let ticks = 0
  for (const todo = [pid]; todo.length > 0; ) {
    const p = todo.pop()!
    ticks += processTicks(p)
    todo.push(...(children.get(p) ?? []))
  }
  return ticks
}

/** Ticks to microseconds. */
export const ticksToMicros = (ticks: number) => (ticks * 1_000_000) / TICKS_PER_SECOND

/** Bun's resourceUsage() reports microseconds; converts to /proc ticks. */
export const microsToTicks = (micros: number) => (micros * TICKS_PER_SECOND) / 1_000_000

/** Contention between two readings, given the ticks our own processes used meanwhile. */
export function contention(before: CpuTimes | undefined, after: CpuTimes | undefined, ownTicks: number): Contention {
  if (!before || !after || after.total === before.total) return { stealPercent: Number.NaN, otherPercent: Number.NaN }
  const total = after.total - before.total
  const others = Math.max(0, after.busy - before.busy - ownTicks)
  return { stealPercent: (100 * (after.steal - before.steal)) / total, otherPercent: (100 * others) / total }
}
