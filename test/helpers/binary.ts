import { spawn, type Subprocess } from 'bun'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { checkerFor } from './answer-checker'
import { ENGINE_SOCKET } from './engine'

export const BINARY = resolve(import.meta.dirname, '..', '..', 'dist', 'berth')

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

export interface Berth {
  url: string
  port: number
  dataDir: string
  proc: Subprocess
  output(): string
  /** SIGTERM and wait. */
  stop(): Promise<void>
  /** SIGKILL and wait: nothing gets a chance to flush. */
  kill9(): Promise<void>
  /** Starts the binary again on the same port and data folder. */
  restart(): Promise<void>
  /** Stops and removes the data folder. */
  dispose(): Promise<void>
}

/**
 * Starts dist/berth serve (or `binary`, e.g. a benchmark's baseline build) on a free loopback
 * port (on every address with `listenHost: '0.0.0.0'`) with a fresh data folder (or the one
 * given) and waits for GET /api/v1/status/ to answer 200. `siteUrl` is its server.site_url
 * (default: `url`, the plain listener's own origin). `urlHost` is the host of `url` (default
 * 127.0.0.1; the cluster lab's control plane listens in a network namespace: test/lab/berth-cluster.ts).
 */
export async function startBerth(opts: { dataDir?: string; env?: Record<string, string>; args?: string[]; port?: number; listenHost?: string; binary?: string; siteUrl?: string; urlHost?: string } = {}): Promise<Berth> {
  const binary = opts.binary ?? BINARY
  if (!existsSync(binary)) throw new Error(`${binary} is missing; run bun run build`)
  const port = opts.port ?? (await freePort())
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'berth-e2e-'))
  const url = `http://${opts.urlHost ?? '127.0.0.1'}:${port}`
  let log = ''
  let proc!: Subprocess
  const launch = async () => {
    proc = spawn([binary, 'serve', '--listen', `${opts.listenHost ?? '127.0.0.1'}:${port}`, '--data-dir', dataDir, '--site-url', opts.siteUrl ?? url, ...(opts.args ?? [])], {
      // Many instances run at once: none listens for DNS unless a test asks (BERTH_DNS_LISTEN).
      // None keeps the host firewall either (containers.firewall): they all share the default
      // subnet pool, so no one instance owns its rules, and rules outlive the test that made them.
      // Tests of the firewall turn it on with a pool of their own and remove their rules after.
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', BERTH_DNS_LISTEN: 'off', BERTH_CONTAINERS_FIREWALL: 'false', BERTH_CONTAINERS_DOCKER_SOCKET: ENGINE_SOCKET, ...imageOverrides(), ...opts.env },
      stdout: 'pipe',
      stderr: 'pipe',
    })
    for (const stream of [proc.stdout, proc.stderr] as ReadableStream<Uint8Array>[]) {
      void (async () => {
        const reader = stream.getReader()
        for (let r = await reader.read(); !r.done; r = await reader.read()) log += new TextDecoder().decode(r.value)
      })()
    }
    await waitReady(url, () => proc.exitCode, () => log)
  }
  await launch()
  const berth: Berth = {
    url, port, dataDir,
    get proc() { return proc },
    output: () => log,
    async stop() {
      if (proc.exitCode === null) {
        proc.kill('SIGTERM')
        await proc.exited
      }
    },
    async kill9() {
      proc.kill('SIGKILL')
      await proc.exited
    },
    async restart() {
      await berth.stop()
      await launch()
    },
    async dispose() {
      await berth.stop()
      if (!opts.dataDir) rmSync(dataDir, { recursive: true, force: true })
    },
  }
  return berth
}

/**
 * The site images named in the tests' own environment (BERTH_CONTAINERS_IMAGE_VPS, _APP, ...),
 * passed on: a change to an image can be tried under a tag of its own, leaving the shared
 * berth/*:1 that other runs on the machine use as they are.
 */
function imageOverrides(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('BERTH_CONTAINERS_IMAGE_') && !!e[1]))
}

async function waitReady(url: string, exitCode: () => number | null, log: () => string) {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    if (exitCode() !== null) throw new Error(`berth exited with ${exitCode()}:\n${log()}`)
    try {
      const res = await fetch(`${url}/api/v1/status/`)
      if (res.status === 200) return
    } catch {
      // not listening yet
    }
    await Bun.sleep(20)
  }
  throw new Error(`berth did not answer within 15 s:\n${log()}`)
}

/** fetch + JSON for end-to-end tests; throws when the answer is not one openapi.json describes. */
export async function api(url: string, method: string, path: string, opts: { body?: unknown; key?: string; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...opts.headers }
  if (opts.key) headers.authorization = `Bearer ${opts.key}`
  if (opts.body !== undefined) headers['content-type'] = 'application/json'
  const res = await fetch(`${url}/api/v1${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) })
  const text = await res.text()
  // Every answer must be one the published document describes (issue 15).
  const checker = await checkerFor(url, async () => (await fetch(`${url}/api/v1/openapi.json`)).json() as Promise<Record<string, any>>)
  checker.check(method, `/api/v1${path}`, res.status, res.headers.get('content-type'), text)
  let json: any
  try {
    json = JSON.parse(text)
  } catch {
    json = undefined
  }
  return { status: res.status, headers: res.headers, json, text }
}
