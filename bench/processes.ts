/**
 * Starting and stopping what the benchmarks measure: the compiled binary and the reference server.
 * Every child process and temporary folder is registered with `cleanup`, which runs on normal
 * exit, on failure and on Ctrl-C, so a failed run never leaves a server holding a port.
 */
import { spawn, type Subprocess } from 'bun'
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'

export const ROOT = resolve(import.meta.dir, '..')
export const BINARY = join(ROOT, 'dist', 'berth')

/** The binary the benchmarks start: BINARY itself until `snapshotBinary` copies it. */
let binaryUnderTest = BINARY

/**
 * Copies dist/berth (or `from`) into a temporary folder and benchmarks the copy from then on. On the shared
 * machines another engineer's `bun run build` can replace dist/berth in the middle of a run;
 * the copy keeps every figure of one run about one binary. Returns the copy's path.
 */
export function snapshotBinary(from = BINARY): string {
  const copy = join(tempDir('berth-bench-bin-'), 'berth')
  copyFileSync(from, copy)
  binaryUnderTest = copy
  return copy
}

const children = new Set<Subprocess>()
const folders = new Set<string>()

/** Kills every child still running and removes every temporary folder. Synchronous, so it also works from an 'exit' handler. */
export function cleanup() {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  }
  children.clear()
  for (const dir of folders) rmSync(dir, { recursive: true, force: true })
  folders.clear()
}

/** Runs `cleanup` however the harness ends. */
export function cleanupOnExit() {
  process.once('exit', cleanup)
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
    process.once(signal, () => {
      cleanup()
      process.exit(code)
    })
  }
}

/** Starts a child and registers it for cleanup. */
export function track<T extends Subprocess>(child: T): T {
  children.add(child)
  void child.exited.then(() => children.delete(child))
  return child
}

/** A fresh temporary folder, removed by `cleanup`. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  folders.add(dir)
  return dir
}

/** A free TCP port on 127.0.0.1, found by binding port 0. */
export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const srv = createServer()
    srv.once('error', fail)
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number }
      srv.close(() => done(port))
    })
  })
}

export interface RunningBerth {
  url: string
  proc: Subprocess
  /** Milliseconds from spawn to the first 200 on /api/v1/status/. */
  readyMs: number
  /** SIGTERM and wait, so the data folder is closed cleanly for the next start. */
  stop(): Promise<void>
}

/**
 * Spawns `dist/berth serve` on a free loopback port and polls /api/v1/status/ every `pollMs`
 * until it answers 200. Output goes to a file in the data folder rather than a pipe, so nothing
 * in the harness has to drain it and a chatty server cannot block on a full pipe. `env` adds
 * `BERTH_*` settings (the environment is otherwise PATH and HOME only). `binary` is another build
 * to start instead (a benchmark's `--baseline`).
 */
export async function startBerth(dataDir: string, pollMs = 2, env: Record<string, string> = {}, binary = binaryUnderTest): Promise<RunningBerth> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const logFile = join(dataDir, `bench-${port}.log`)
  const started = performance.now()
  const proc = track(spawn([binary, 'serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, '--site-url', url], {
    // The site firewall stays off, as in the tests (test/helpers/binary.ts): a benchmark leaves no
    // rules on the machine for the default pool, which other Berths on it share.
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', BERTH_CONTAINERS_FIREWALL: 'false', ...env },
    stdout: Bun.file(logFile),
    stderr: Bun.file(`${logFile}.err`),
  }))
  await waitForOk(`${url}/api/v1/status/`, proc, pollMs, () => readLog(logFile))
  const readyMs = performance.now() - started
  return {
    url,
    proc,
    readyMs,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM')
      await proc.exited
    },
  }
}

export interface RunningReference {
  whoamiUrl: string
  plansUrl: string
  proc: Subprocess
}

/** Starts bench/reference-server.ts in its own Bun process, serving the given envelope bodies. */
export async function startReference(bodies: { whoami: unknown; plans: unknown }): Promise<RunningReference> {
  const dir = tempDir('berth-bench-ref-')
  const bodiesFile = join(dir, 'bodies.json')
  await Bun.write(bodiesFile, JSON.stringify(bodies))
  const [whoamiPort, plansPort] = [await freePort(), await freePort()]
  const proc = track(spawn([process.execPath, join(import.meta.dir, 'reference-server.ts'), String(whoamiPort), String(plansPort), bodiesFile], {
    stdout: 'inherit',
    stderr: 'inherit',
  }))
  const whoamiUrl = `http://127.0.0.1:${whoamiPort}/`
  const plansUrl = `http://127.0.0.1:${plansPort}/`
  await waitForOk(whoamiUrl, proc, 10, () => '')
  await waitForOk(plansUrl, proc, 10, () => '')
  return { whoamiUrl, plansUrl, proc }
}

/** Polls `url` until it answers 200; fails if the process exits or 15 s pass. */
async function waitForOk(url: string, proc: Subprocess, pollMs: number, output: () => string) {
  const deadline = performance.now() + 15_000
  while (performance.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`${url}: the server exited with ${proc.exitCode}\n${output()}`)
    try {
      const res = await fetch(url)
      await res.arrayBuffer()
      if (res.status === 200) return
    } catch {
      // Not listening yet.
    }
    await Bun.sleep(pollMs)
  }
  throw new Error(`${url} did not answer 200 within 15 s\n${output()}`)
}

function readLog(file: string): string {
  const read = (f: string) => {
    try {
      return readFileSync(f, 'utf8')
    } catch {
      return ''
    }
  }
  return read(file) + read(`${file}.err`)
}

/** Resident set size of a process in MB, from /proc/PID/status (Linux only). */
export function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
  if (!kb) throw new Error(`no VmRSS in /proc/${pid}/status`)
  return Number(kb[1]) / 1024
}

/** Polls `check` every `pollMs` until it answers true (a throw counts as false); throws after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, pollMs = 5) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await Bun.sleep(pollMs)
  }
  throw new Error(`timed out after ${timeoutMs} ms`)
}

/** CPU time of a container's cgroup (v1 or v2), in µs; NaN where neither is found. */
export function containerMicros(id: string): number {
  try {
    return Number(readFileSync(`/sys/fs/cgroup/cpuacct/docker/${id}/cpuacct.usage`, 'utf8')) / 1000
  } catch {
    try {
      return Number(/usage_usec (\d+)/.exec(readFileSync(`/sys/fs/cgroup/system.slice/docker-${id}.scope/cpu.stat`, 'utf8'))![1])
    } catch {
      return Number.NaN
    }
  }
}
