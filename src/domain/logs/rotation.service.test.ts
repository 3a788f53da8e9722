import { randomBytes } from 'node:crypto'
import { appendFileSync, existsSync, lstatSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openSiteHome } from '../../drivers/files/home'
import { DockerRuntime } from '../../drivers/runtime/docker'
import { buildImages, IMAGES } from '../../drivers/runtime/images'
import { LABEL } from '../../drivers/runtime/site-container'
import type { SiteEndpoint, SiteSpec } from '../../drivers/runtime/types'
import { memoryLogger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { PlansService } from '../plans/service'
import { LogRotation } from './rotation'
import { LogsService } from './service'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

/**
 * Issue 38, item 3, on real site containers of the real engine: requests numbered 0..N-1 are sent
 * without pause while the logs are rotated every 10 ms (an 8 KiB size: about ten rotations each, nginx writing into NAME.1 until its reopening),
 * and every number is then found exactly once across the current and rotated files: nginx
 * (berth/php, access.log, reopened on USR1 through exec) and busybox httpd (berth/static,
 * error.log, through the image's line logger) lose no line across a rotation, and write into the
 * new file afterwards. The logs API then reads the same lines across the files (`lines`, `search`).
 */
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.235.0.0/16', pidsLimit: 128, log: memoryLogger() })
const KEEP = 100
const ROTATE_BYTES = 8 * 1024

function spec(slug: string, over: Partial<SiteSpec> = {}): SiteSpec {
  return { siteId: `id-${slug}`, slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null, ...over }
}

async function answered(ep: SiteEndpoint, timeoutMs = 20_000): Promise<void> {
  const started = performance.now()
  for (;;) {
    try {
      await (await fetch(`http://${ep.address}:${ep.port}/`, { signal: AbortSignal.timeout(1000) })).arrayBuffer()
      return
    } catch (err) {
      if (performance.now() - started > timeoutMs) throw err
      await Bun.sleep(20)
    }
  }
}

/** Sends `count` numbered requests (`path(i)`), `parallel` at a time, while the site's logs are rotated every 10 ms. Returns how many rotations happened. */
async function writeWhileRotating(slug: string, ep: SiteEndpoint, count: number, path: (i: number) => string, rotation: LogRotation, parallel = 4): Promise<number> {
  let next = 0
  let done = false
  let rotations = 0
  const rotating = (async () => {
    while (!done) {
      rotations += (await rotation.rotateSite(slug)).length
      await Bun.sleep(10)
    }
  })()
  const writer = async () => {
    while (next < count) {
      const i = next++
      const res = await fetch(`http://${ep.address}:${ep.port}${path(i)}`)
      await res.arrayBuffer()
    }
  }
  await Promise.all(Array.from({ length: parallel }, writer))
  done = true
  await rotating
  return rotations
}

/** The numbers `pattern` captures in the log `name` and its rotated files, with how often each. */
function numbersIn(logs: string, name: string, pattern: RegExp): Map<number, number> {
  const seen = new Map<number, number>()
  for (const file of readdirSync(logs).filter((f) => f === name || f.startsWith(`${name}.`))) {
    for (const match of readFileSync(join(logs, file), 'utf8').matchAll(pattern)) seen.set(Number(match[1]), (seen.get(Number(match[1])) ?? 0) + 1)
  }
  return seen
}

/** numbersIn once `count` numbers are there (a server writes its line after answering, the line logger a moment later), or as they are after 5 s. */
async function numbersSoon(logs: string, name: string, pattern: RegExp, count: number): Promise<Map<number, number>> {
  const deadline = Date.now() + 5000
  for (;;) {
    const seen = numbersIn(logs, name, pattern)
    if (seen.size >= count || Date.now() > deadline) return seen
    await Bun.sleep(50)
  }
}

/** True once the file at `path` holds `text` (a server writes its line after answering), false after 5 s. */
async function fileSoonHas(path: string, text: string): Promise<boolean> {
  const deadline = Date.now() + 5000
  for (;;) {
    // Not there yet either: the line logger makes the new file with its first line.
    if (existsSync(path) && readFileSync(path, 'utf8').includes(text)) return true
    if (Date.now() > deadline) return false
    await Bun.sleep(20)
  }
}

beforeAll(async () => {
  await buildImages({ socketPath: SOCKET, cacheDir: join(tmpdir(), 'berth-test-debian-cache'), env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' } })
}, 300_000)

afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
}, 120_000)

describe('log rotation under a writer, on real site containers', () => {
  const rotation = new LogRotation({ sites: { listLive: () => [] }, runtime, openHome: openSiteHome, log: memoryLogger(), rotateBytes: ROTATE_BYTES, keep: KEEP })

  it('berth/php: nginx access.log, rotated about ten times while requests run, loses no line; the logs API reads across the files', async () => {
    const N = 3000
    const ep = await runtime.ensureSite(spec('php-rotate', { image: IMAGES.php, hostingType: 'vps', memoryMb: 256 }))
    await answered(ep)
    const rotations = await writeWhileRotating('php-rotate', ep, N, (i) => `/robots.txt?seq=${i}`, rotation)
    const logs = join(await runtime.homePath('php-rotate'), 'logs')
    expect(rotations).toBeGreaterThanOrEqual(5)

    const seen = await numbersSoon(logs, 'access.log', /\?seq=(\d+) /g, N)
    const missing = Array.from({ length: N }, (_, i) => i).filter((i) => seen.get(i) !== 1)
    expect({ missing, lines: seen.size }).toEqual({ missing: [], lines: N })
    for (const f of readdirSync(logs).filter((n) => n.startsWith('access.log'))) expect([f, lstatSync(join(logs, f)).uid]).toEqual([f, 1000])

    // nginx reopened: a request after the last rotation is in the current file.
    await rotation.rotateSite('php-rotate')
    await (await fetch(`http://${ep.address}:${ep.port}/robots.txt?seq=after`)).arrayBuffer()
    expect(await fileSoonHas(join(logs, 'access.log'), '?seq=after ')).toBe(true)

    // PHP-FPM's master reopens php.log too (USR1), saying so in the new file.
    appendFileSync(join(logs, 'php.log'), 'filler\n'.repeat(2000))
    expect(await rotation.rotateSite('php-rotate')).toContain('logs/php.log')
    expect(await fileSoonHas(join(logs, 'php.log'), 'error log file re-opened')).toBe(true)

    const api = new LogsService({ get: () => ({ hosting_type: 'vps' }) } as unknown as PlansService, runtime, openSiteHome, undefined, undefined, KEEP)
    const site = { slug: 'php-rotate', planSlug: 'business' } as SiteRow
    const all = (await api.read(site, { type: 'access', lines: N + 1 })).lines
    expect(all.length).toBe(N + 1)
    expect(all.at(-1)).toContain('?seq=after ')
    expect(new Set(all.map((l) => /\?seq=(\d+) /.exec(l)?.[1]).filter(Boolean)).size).toBe(N)
    const found = (await api.read(site, { type: 'access', search: '?seq=3 ' })).lines
    expect(found).toHaveLength(1)
  }, 180_000)

  it('berth/static: busybox httpd error.log (through the line logger), rotated while requests run, loses no line', async () => {
    const N = 2000
    const ep = await runtime.ensureSite(spec('static-rotate'))
    await answered(ep)
    const rotations = await writeWhileRotating('static-rotate', ep, N, (i) => `/missing-${i}`, rotation)
    expect(rotations).toBeGreaterThanOrEqual(5)
    const logs = join(await runtime.homePath('static-rotate'), 'logs')
    const seen = await numbersSoon(logs, 'error.log', /url:\/missing-(\d+)\n/g, N)
    const missing = Array.from({ length: N }, (_, i) => i).filter((i) => seen.get(i) !== 1)
    expect({ missing, lines: seen.size }).toEqual({ missing: [], lines: N })
    await rotation.rotateSite('static-rotate')
    await (await fetch(`http://${ep.address}:${ep.port}/missing-after`)).arrayBuffer()
    expect(await fileSoonHas(join(logs, 'error.log'), 'url:/missing-after')).toBe(true)
  }, 180_000)
})
