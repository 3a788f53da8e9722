/**
 * Running wrk and reading its report. Every target gets the same settings (connections, threads,
 * warm-up, duration), so the only difference between two runs is the server.
 */
import { spawn } from 'bun'
import { writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { contention, microsToTicks, readCpuTimes, ticksToMicros, treeTicks, type Contention } from './cpu-contention'
import { track } from './processes'

export const WRK_SETTINGS = { connections: 64, threads: 2, warmupSeconds: 3, durationSeconds: 10 }

export interface WrkTarget {
  name: string
  url: string
  /** The server process, so its own CPU time is not counted as contention. */
  pid: number
  headers?: Record<string, string>
  /** A wrk Lua script (method, body), for POST targets. */
  script?: string
  /**
   * Names for wrk to resolve, as curl's --resolve: wrk sends the URL's host as TLS SNI, and
   * Berth's HTTPS listener refuses a handshake that names no host it holds a certificate for
   * (an address included). wrk then runs with these in /etc/hosts, in a mount namespace of its
   * own (`unshare -m`, root), so the machine's file is left alone.
   */
  resolve?: Record<string, string>
}

export interface WrkResult {
  requestsPerSec: number
  p50Ms: number
  p99Ms: number
  requests: number
  /** Responses outside 2xx/3xx: a 401 or 429 would make the figures meaningless. */
  non2xx: number
  socketErrors: number
  /** What else used the machine during the run (NaN where unknown). */
  contention: Contention
  /** CPU time of the server (with its child processes) per completed request, in µs. */
  serverCpuMicros: number
}

export function wrkInstalled(): boolean {
  return Bun.which('wrk') !== null
}

/** A short run whose figures are thrown away, so JIT tiers, caches and connections are warm. */
export async function warmUp(target: WrkTarget): Promise<void> {
  await runWrk(target, WRK_SETTINGS.warmupSeconds)
}

export async function measure(target: WrkTarget): Promise<WrkResult> {
  const result = await runWrk(target, WRK_SETTINGS.durationSeconds)
  if (result.requests === 0) throw new Error(`${target.name}: wrk completed no requests`)
  return result
}

async function runWrk(target: WrkTarget, seconds: number): Promise<WrkResult> {
  const before = readCpuTimes()
  // The server with its child processes (nginx's workers): its own CPU, not contention.
  const serverBefore = treeTicks(target.pid)
  const args = ['wrk', `-t${WRK_SETTINGS.threads}`, `-c${WRK_SETTINGS.connections}`, `-d${seconds}s`, '--latency']
  for (const [name, value] of Object.entries(target.headers ?? {})) args.push('-H', `${name}: ${value}`)
  if (target.script) args.push('-s', target.script)
  args.push(target.url)
  const proc = track(spawn(target.resolve ? withHosts(target.resolve, args) : args, { stdout: 'pipe', stderr: 'pipe' }))
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`wrk failed on ${target.name} (exit ${code}):\n${out}${err}`)
  const after = readCpuTimes()
  const serverTicks = treeTicks(target.pid) - serverBefore
  const ownTicks = serverTicks + microsToTicks(Number(proc.resourceUsage()?.cpuTime.total ?? 0))
  const report = parseWrk(out)
  return { ...report, contention: contention(before, after, ownTicks), serverCpuMicros: ticksToMicros(serverTicks) / report.requests }
}

/** Parses wrk 4's text report (with --latency). Exported for checking against saved output. */
export function parseWrk(out: string): Omit<WrkResult, 'contention' | 'serverCpuMicros'> {
  const rps = /^Requests\/sec:\s+([\d.]+)/m.exec(out)
  const p50 = /^\s+50%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(out)
  const p99 = /^\s+99%\s+([\d.]+)(us|ms|s|m)\s*$/m.exec(out)
  const total = /^\s+(\d+) requests in /m.exec(out)
  if (!rps || !p50 || !p99 || !total) throw new Error(`unexpected wrk output:\n${out}`)
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out)
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out)
  return {
    requestsPerSec: Number(rps[1]),
    p50Ms: toMs(Number(p50[1]), p50[2]!),
    p99Ms: toMs(Number(p99[1]), p99[2]!),
    requests: Number(total[1]),
    non2xx: non2xx ? Number(non2xx[1]) : 0,
    socketErrors: socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0,
  }
}

/** wrk prints durations with the largest unit that keeps the number ≥ 1: us, ms, s, then m. */
function toMs(value: number, unit: string): number {
  switch (unit) {
    case 'us': return value / 1000
    case 'ms': return value
    case 's': return value * 1000
    case 'm': return value * 60_000
  }
  throw new Error(`unknown wrk time unit '${unit}'`)
}

/** `command` run with `names` in its own /etc/hosts (a private mount namespace; the host's file is not touched). */
function withHosts(names: Record<string, string>, command: string[]): string[] {
  const file = join(tmpdir(), `berth-bench-hosts-${process.pid}`)
  writeFileSync(file, `127.0.0.1 localhost\n${Object.entries(names).map(([name, address]) => `${address} ${name}`).join('\n')}\n`)
  return ['unshare', '-m', 'sh', '-c', 'mount --bind "$0" /etc/hosts && exec "$@"', file, ...command]
}
