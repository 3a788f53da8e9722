import { randomBytes } from 'node:crypto'
import { lstatSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { DockerRuntime } from './docker'
import { buildImages, IMAGES } from './images'
import { LABEL } from './site-container'
import type { SiteEndpoint, SiteSpec } from './types'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

/**
 * Issue 36, item 5: a home whose `logs` is a link (or `.ssh`, with SSH on) never stops its site
 * from starting. The real images on the real engine: each site is started once, stopped, its
 * home's `logs` (and `.ssh`) replaced by a link to a folder of the host (dangling in the
 * container), and started again: it serves, its `logs` is a real folder again and the link is
 * beside it, moved aside, never followed (the host folder stays empty). Before, the start
 * script's `mkdir -p ~/logs` failed on the link, the server could not open its log, and the
 * container restarted forever.
 */
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.234.0.0/16', pidsLimit: 128, log: memoryLogger() })
const outside = mkdtempSync(join(tmpdir(), 'berth-links-outside-'))

function spec(slug: string, over: Partial<SiteSpec> = {}): SiteSpec {
  return { siteId: `id-${slug}`, slug, hostingType: 'shared', image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null, ...over }
}

/** The site's answer once its web server answers, or the last error after `timeoutMs`. */
async function firstAnswer(ep: SiteEndpoint, timeoutMs: number): Promise<{ status: number; body: string }> {
  const started = performance.now()
  for (;;) {
    try {
      const res = await fetch(`http://${ep.address}:${ep.port}/`, { signal: AbortSignal.timeout(1000) })
      return { status: res.status, body: await res.text() }
    } catch (err) {
      if (performance.now() - started > timeoutMs) throw err
      await Bun.sleep(20)
    }
  }
}

beforeAll(async () => {
  await buildImages({ socketPath: SOCKET, cacheDir: join(tmpdir(), 'berth-test-debian-cache'), env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' } })
}, 300_000)

afterAll(async () => {
  await removeEngineInstance(docker, instanceId)
  rmSync(outside, { recursive: true, force: true })
}, 120_000)

describe('a home whose logs is a link', () => {
  const CASES: { image: string; slug: string; links: string[]; ssh: boolean }[] = [
    { image: 'berth/static', slug: 'static-links', links: ['logs'], ssh: false },
    { image: 'berth/php, SSH on', slug: 'php-links', links: ['logs', '.ssh'], ssh: true },
  ]
  for (const c of CASES) {
    it(`${c.image}: ${c.links.join(' and ')} linked out, the site starts and serves; the links are moved aside, not followed`, async () => {
      const port = c.ssh ? await freePort() : null
      const s = spec(c.slug, { image: c.ssh ? IMAGES.php : IMAGES.static, hostingType: c.ssh ? 'vps' : 'shared', sshPort: port, memoryMb: c.ssh ? 256 : 128 })
      await firstAnswer(await runtime.ensureSite(s), 20_000)
      await runtime.stopSite(c.slug)
      const home = await runtime.homePath(c.slug)
      for (const name of c.links) {
        rmSync(join(home, name), { recursive: true, force: true })
        symlinkSync(outside, join(home, name))
      }

      const ep = await runtime.ensureSite(s)
      const res = await firstAnswer(ep, 20_000)
      expect(res.status).toBe(200)
      // Still running a few seconds later (a start script that fails makes it restart).
      await Bun.sleep(2000)
      const state = (await docker.getContainer(ep.containerId).inspect()).State
      expect([state.Running, state.Restarting]).toEqual([true, false])
      expect((await docker.getContainer(ep.containerId).inspect()).RestartCount).toBe(0)
      for (const name of c.links) {
        const st = lstatSync(join(home, name))
        expect([name, st.isDirectory(), st.uid]).toEqual([name, true, 1000])
        const aside = readdirSync(home).filter((n) => n.startsWith(`${name}.moved-aside-`))
        expect(aside).toHaveLength(1)
        expect(readlinkSync(join(home, aside[0]))).toBe(outside)
      }
      expect(readdirSync(join(home, 'logs')).length).toBeGreaterThan(0)
      expect(readdirSync(outside)).toEqual([])
      await runtime.removeSite(c.slug, { volume: true })
    }, 120_000)
  }
})

/** A TCP port free on this machine now. */
async function freePort(): Promise<number> {
  const probe = Bun.listen({ hostname: '0.0.0.0', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}
