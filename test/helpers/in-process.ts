import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/api/app'
import { databasePath, type BuildOptions } from '../../src/compose'
import { buildApp } from '../../src/compose/app'
import { loadConfig, type LoadOptions } from '../../src/config/config'
import type { ContainerRuntime } from '../../src/drivers/runtime/types'
import { ManualClock } from '../../src/lib/clock'
import { memoryLogger } from '../../src/lib/logger'
import Docker from 'dockerode'
import { removeEngineInstance } from './engine-instance'
import { RecordingRuntime } from './recording-runtime'
import { AnswerChecker } from './answer-checker'
import { placeMigratedDatabase } from './migrated-db'
import { FakeDatabaseRuntime } from './database-double'
import type { DatabaseRuntime } from '../../src/domain/databases'

export interface CallOptions {
  body?: unknown
  /** Sent as-is when a string, JSON-encoded otherwise. */
  rawBody?: string
  /** Sent as these exact bytes (for bodies that are not valid UTF-8). */
  rawBytes?: Uint8Array<ArrayBuffer>
  key?: string
  headers?: Record<string, string>
}

export interface CallResult {
  status: number
  headers: Headers
  json: any
  text: string
}

/**
 * The whole API in-process on a real SQLite file in a temporary folder, with a manual clock and
 * an in-memory log. `call` sends real Request objects through Elysia's handler.
 *
 * The container runtime is a RecordingRuntime unless the test passes its own, or `'docker'` for the
 * real engine: only service-tier suites (`*.service.test.ts`) may ask for Docker.
 */
export function inProcess(options: { env?: Record<string, string>; file?: string | null; runtime?: ContainerRuntime | 'docker'; databaseRuntime?: DatabaseRuntime; placement?: BuildOptions['placement']; recovering?: BuildOptions['recovering']; resolver?: BuildOptions['resolver']; webhookTimeoutMs?: number } & Pick<LoadOptions, 'flags'> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'berth-test-'))
  // In-process requests have no socket; they come from 127.0.0.1, trusted here so tests can pose
  // as many clients through X-Forwarded-For.
  const config = loadConfig({
    env: { BERTH_SERVER_DATA_DIR: dir, BERTH_SERVER_TRUSTED_PROXIES: '127.0.0.1', ...options.env },
    file: options.file ?? null,
    flags: options.flags,
  })
  placeMigratedDatabase(databasePath(config))
  const clock = new ManualClock(Date.UTC(2026, 10, 1))
  const log = memoryLogger()
  const recording = options.runtime === undefined ? new RecordingRuntime() : null
  const runtime = options.runtime === 'docker' ? undefined : (options.runtime ?? recording!)
  // buildApp's `test` role: berth serve's deps (ServerDeps) plus the few objects tests drive
  // directly (compose/app.ts TestExtras), and the admin facades berth serve's socket serves.
  // The sites' database servers: a fake (test/helpers/database-double.ts) unless the test passes the real one.
  const databaseRuntime = options.databaseRuntime ?? new FakeDatabaseRuntime()
  const built = buildApp(config, 'test', { clock, log, runtime, databaseRuntime, placement: options.placement, firewall: null, recovering: options.recovering, resolver: options.resolver, webhookTimeoutMs: options.webhookTimeoutMs })
  const { services, admin, nodeOpsDeps } = built
  const app = createApp(services)
  let checker: AnswerChecker | undefined
  async function call(method: string, path: string, opts: CallOptions = {}): Promise<CallResult> {
    const headers: Record<string, string> = { ...opts.headers }
    if (opts.key) headers.authorization = `Bearer ${opts.key}`
    let body: string | Uint8Array<ArrayBuffer> | undefined = opts.rawBytes ?? opts.rawBody
    if (opts.body !== undefined) {
      body = JSON.stringify(opts.body)
      headers['content-type'] ??= 'application/json'
    }
    const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body }))
    const text = await res.text()
    // Every answer must be one the published document describes (issue 15).
    if (path.startsWith('/api/v1/') && !path.startsWith('/api/v1/openapi.json')) {
      checker ??= AnswerChecker.of(await (await app.handle(new Request('http://localhost/api/v1/openapi.json'))).text())
      checker.check(method, path, res.status, res.headers.get('content-type'), text)
    }
    let json: any
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    return { status: res.status, headers: res.headers, json, text }
  }
  /** Registers an account from its own address and returns its first (admin) key. */
  async function register(email?: string): Promise<{ key: string; accountId: string; keyId: string }> {
    const ip = `10.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}`
    const res = await call('POST', '/api/v1/auth/register/', { body: email ? { email } : {}, headers: { 'x-forwarded-for': ip } })
    if (res.status !== 201) throw new Error(`register failed: ${res.status} ${res.text}`)
    return { key: res.json.data.api_key, accountId: res.json.data.account_id, keyId: res.json.data.key_id }
  }
  return {
    app, services, admin, nodeOpsDeps, clock, log, dir, call, register, databaseRuntime,
    /** Stops background work, removes every container this instance made, deletes the data. */
    async close() {
      await services.jobs.stop()
      const managed = await services.runtime.listManaged().catch(() => [])
      await Promise.all(managed.map((c) => services.runtime.removeSite(c.slug, { volume: true }).catch(() => {})))
      // What no container names any more (a test removed or swapped it): the volumes and disks.
      if (options.runtime === 'docker') await removeEngineInstance(new Docker({ socketPath: config.containers.dockerSocket }), services.instanceId)
      built.close()
      recording?.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type InProcess = ReturnType<typeof inProcess>
