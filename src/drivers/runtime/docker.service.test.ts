import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Docker from 'dockerode'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { HostingType } from '../../core/enums'
import { memoryLogger } from '../../lib/logger'
import { DEFAULT_PAGE_TITLE } from './default-page'
import { DockerRuntime } from './docker'
import { buildImages, IMAGES } from './images'
import { LABEL } from './site-container'
import { HostPortTakenError, RuntimeUnavailableError, type ExecResult, type SiteEndpoint, type SiteSpec } from './types'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'

// Runs against the real engine. Each run has its own instance id, so parallel runs (and other
// suites sharing the engine) never see each other's sites; afterAll removes everything labelled
// with it.
const SOCKET = '/var/run/docker.sock'
const docker = new Docker({ socketPath: SOCKET })
const instanceId = `t${randomBytes(4).toString('hex')}`
const log = memoryLogger()
const runtime = new DockerRuntime({ socketPath: SOCKET, instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 128, log })
/** A second Berth instance on the same engine. */
const neighbourId = `t${randomBytes(4).toString('hex')}`
const neighbour = new DockerRuntime({ socketPath: SOCKET, instanceId: neighbourId, subnetPool: '10.231.0.0/16', pidsLimit: 128, log })

function spec(slug: string, over: Partial<SiteSpec> = {}): SiteSpec {
  const hostingType: HostingType = over.image === IMAGES.php ? 'vps' : 'shared'
  return { siteId: `id-${slug}`, slug, hostingType, image: IMAGES.static, memoryMb: 128, cpuCores: 0.5, pidsLimit: 64, diskGb: 1, sshPort: null, ...over }
}

/** Polls (every 5 ms) until the site's web server answers; returns the answer and the wait. */
async function firstAnswer(ep: SiteEndpoint, path = '/', timeoutMs = 10_000): Promise<{ status: number; body: string; ms: number }> {
  const started = performance.now()
  for (;;) {
    try {
      const res = await fetch(`http://${ep.address}:${ep.port}${path}`, { signal: AbortSignal.timeout(1000) })
      return { status: res.status, body: await res.text(), ms: performance.now() - started }
    } catch (err) {
      if (performance.now() - started > timeoutMs) throw err
      await Bun.sleep(5)
    }
  }
}

/** Runs a command in a container (as its user, 1000); a TTY keeps the output unmultiplexed. */
async function exec(containerId: string, cmd: string[]): Promise<{ code: number; output: string }> {
  const run = await docker.getContainer(containerId).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: true })
  const stream = await run.start({ Tty: true })
  let output = ''
  stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  await new Promise((done) => stream.on('end', done))
  return { code: (await run.inspect()).ExitCode ?? -1, output }
}

async function removeInstance(id: string) {
  await removeEngineInstance(docker, id)
}

beforeAll(async () => {
  // Quick when the images exist with the same definition; the PHP base takes about 2 minutes
  // the first time on a machine.
  await buildImages({
    socketPath: SOCKET,
    cacheDir: join(tmpdir(), 'berth-test-debian-cache'),
    env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' },
  })
}, 300_000)

afterAll(async () => {
  await Promise.all([instanceId, neighbourId].map(removeInstance))
}, 180_000)

describe('DockerRuntime', () => {
  let site: SiteEndpoint

  it('starts a new site that answers 200 with the default page', async () => {
    site = await runtime.ensureSite(spec('alpha'))
    const res = await firstAnswer(site)
    expect(res.status).toBe(200)
    expect(res.body).toContain(DEFAULT_PAGE_TITLE)
    expect(site.port).toBe(8080)
  })

  it('is idempotent: ensuring a running site returns the same container', async () => {
    const again = await runtime.ensureSite(spec('alpha'))
    expect(again).toEqual(site)
    expect((await runtime.inspectSite('alpha'))?.running).toBe(true)
  })

  it('runs the container with the isolation defaults', async () => {
    const info = await docker.getContainer(site.containerId).inspect()
    const host = info.HostConfig
    expect(info.Config.User).toBe('1000:1000')
    expect(host.Privileged).toBe(false)
    expect(host.CapDrop).toEqual(['ALL'])
    expect(host.CapAdd ?? []).toEqual([])
    expect(host.SecurityOpt).toContain('no-new-privileges')
    expect(host.Init).toBe(true)
    expect(host.Memory).toBe(128 * 1024 * 1024)
    expect(host.MemorySwap).toBe(128 * 1024 * 1024)
    expect(host.NanoCpus).toBe(500_000_000)
    expect(host.PidsLimit).toBe(64)
    expect(host.ReadonlyRootfs).toBe(true)
    expect(host.NetworkMode).toBe(`berth-${instanceId}-alpha`)
    expect(host.PidMode ?? '').toBe('')
    expect(host.IpcMode).toBe('private')
    expect(host.LogConfig).toEqual({ Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } })
    expect(host.RestartPolicy?.Name).toBe('unless-stopped')
    expect(info.Mounts.map((m) => m.Source ?? '').some((s) => s.includes('docker.sock'))).toBe(false)
    expect(info.Mounts.map((m) => [m.Type, m.Name, m.Destination])).toEqual([['volume', `berth-${instanceId}-alpha-home`, '/home/site']])
    expect(info.Config.Labels).toMatchObject({ [LABEL.managed]: 'true', [LABEL.instance]: instanceId, [LABEL.siteId]: 'id-alpha', [LABEL.slug]: 'alpha' })
    // And from inside: uid 1000, no effective capabilities, a read-only root.
    const inside = await exec(site.containerId, ['sh', '-c', 'id -u; grep CapEff /proc/self/status; touch /x 2>&1; touch /tmp/x && echo tmp-ok'])
    expect(inside.output).toMatch(/^1000\r?\nCapEff:\s+0+\r?\n.*Read-only file system\r?\ntmp-ok/s)
  })

  it('keeps sites from reaching each other, while the host reaches both', async () => {
    const other = await runtime.ensureSite(spec('bravo'))
    expect((await firstAnswer(other)).status).toBe(200)
    expect((await firstAnswer(site)).status).toBe(200)
    expect(other.address).not.toBe(site.address)
    // `timeout 2 wget`, not `wget -T 2`: Debian's static busybox 1.35 wget segfaults with -T.
    const fetchFrom = (url: string) => exec(site.containerId, ['timeout', '2', 'wget', '-q', '-O-', url])
    const self = await fetchFrom(`http://${site.address}:8080/`)
    expect(self).toMatchObject({ code: 0, output: expect.stringContaining(DEFAULT_PAGE_TITLE) })
    const across = await fetchFrom(`http://${other.address}:8080/`)
    expect(across.code).not.toBe(0)
    expect(across.output).not.toContain(DEFAULT_PAGE_TITLE)
  })

  it('keeps the files when the container is removed without its volume', async () => {
    expect((await exec(site.containerId, ['sh', '-c', 'echo kept > /home/site/public/kept.txt'])).code).toBe(0)
    await runtime.removeSite('alpha', { volume: false })
    expect(await runtime.inspectSite('alpha')).toBeNull()
    await runtime.removeSite('alpha', { volume: false })
    const back = await runtime.ensureSite(spec('alpha'))
    expect(back.containerId).not.toBe(site.containerId)
    expect((await firstAnswer(back, '/kept.txt')).body).toBe('kept\n')
    site = back
  })

  it('changes the limits in place: the same container keeps running, with the new limits', async () => {
    const startedAt = (await docker.getContainer(site.containerId).inspect()).State.StartedAt
    const bigger = await runtime.ensureSite(spec('alpha', { memoryMb: 192, cpuCores: 1, pidsLimit: 96 }))
    expect(bigger).toEqual(site)
    const info = await docker.getContainer(bigger.containerId).inspect()
    expect([info.HostConfig.Memory, info.HostConfig.MemorySwap, info.HostConfig.NanoCpus, info.HostConfig.PidsLimit]).toEqual([192 * 1024 * 1024, 192 * 1024 * 1024, 1e9, 96])
    // Not restarted: the same start time, and the cgroup itself holds the new ceiling.
    expect(info.State.StartedAt).toBe(startedAt)
    const ceiling = await exec(bigger.containerId, ['sh', '-c', 'cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes'])
    expect(ceiling.output.trim()).toBe(String(192 * 1024 * 1024))
    expect((await firstAnswer(bigger, '/kept.txt')).body).toBe('kept\n')
  })

  it('recreates the container when the image changes, files kept', async () => {
    const other = await runtime.ensureSite(spec('alpha', { memoryMb: 192, cpuCores: 1, pidsLimit: 96, image: IMAGES.php }))
    expect(other.containerId).not.toBe(site.containerId)
    expect((await docker.getContainer(other.containerId).inspect()).Config.Image).toBe(IMAGES.php)
    expect((await firstAnswer(other, '/kept.txt')).body).toBe('kept\n')
    const back = await runtime.ensureSite(spec('alpha', { memoryMb: 192, cpuCores: 1, pidsLimit: 96 }))
    expect(back.containerId).not.toBe(other.containerId)
    expect((await firstAnswer(back, '/kept.txt')).body).toBe('kept\n')
    site = back
  })

  it('stops a site, and starts the same container again', async () => {
    const started = performance.now()
    await runtime.stopSite('alpha')
    // Docker's init forwards SIGTERM, so the stop does not wait out Docker's 10 s grace period.
    expect(performance.now() - started).toBeLessThan(9000)
    expect((await runtime.inspectSite('alpha'))?.running).toBe(false)
    await runtime.stopSite('alpha')
    const again = await runtime.ensureSite(spec('alpha', { memoryMb: 192, cpuCores: 1, pidsLimit: 96 }))
    expect(again.containerId).toBe(site.containerId)
    expect((await firstAnswer(again)).status).toBe(200)
  })

  it('removes everything labelled with the site when the volume goes too', async () => {
    await runtime.removeSite('alpha', { volume: true })
    const filters = { label: [`${LABEL.instance}=${instanceId}`, `${LABEL.slug}=alpha`] }
    expect(await docker.listContainers({ all: true, filters })).toEqual([])
    expect(await docker.listNetworks({ filters })).toEqual([])
    expect((await docker.listVolumes({ filters })).Volumes ?? []).toEqual([])
    expect(await runtime.inspectSite('alpha')).toBeNull()
    await runtime.removeSite('alpha', { volume: true })
    await runtime.stopSite('alpha')
  })

  it("lists only this instance's containers and will not quarantine another's", async () => {
    const theirs = await neighbour.ensureSite(spec('bravo'))
    const mine = await runtime.listManaged()
    expect(mine.map((c) => [c.name, c.slug, c.siteId, c.running])).toEqual([[`berth-${instanceId}-bravo`, 'bravo', 'id-bravo', true]])
    expect((await neighbour.listManaged()).map((c) => [c.containerId, c.name])).toEqual([[theirs.containerId, `berth-${neighbourId}-bravo`]])
    await expect(runtime.quarantine(theirs.containerId)).rejects.toThrow(/not managed by this Berth instance/)
    expect((await docker.getContainer(theirs.containerId).inspect()).State.Running).toBe(true)
    await runtime.quarantine(mine[0].containerId)
    expect((await runtime.listManaged())[0].running).toBe(false)
  })

  it('serves index.php through PHP-FPM on the PHP image', async () => {
    const php = await runtime.ensureSite(spec('charlie', { image: IMAGES.php, memoryMb: 256 }))
    const home = await firstAnswer(php)
    expect(home.status).toBe(200)
    expect(home.body).toContain(DEFAULT_PAGE_TITLE)
    expect(home.body).toMatch(/PHP 8\.\d+\.\d+ is running/)
    expect(home.body).not.toContain('<?')
    const write = await exec(php.containerId, ['sh', '-c', 'echo "<?php echo 6 * 7, \' \', get_current_user(), \' \', posix_geteuid();" > /home/site/public/calc.php'])
    expect(write.code).toBe(0)
    expect((await firstAnswer(php, '/calc.php')).body).toBe('42 site 1000')
    const logs = await exec(php.containerId, ['sh', '-c', 'ls /home/site/logs; grep -c "GET /calc.php" /home/site/logs/access.log'])
    expect(logs.output).toMatch(/access\.log\s+error\.log\s+php\.log\s+1/)
    const host = (await docker.getContainer(php.containerId).inspect()).HostConfig
    expect([host.CapDrop, host.ReadonlyRootfs, host.Init]).toEqual([['ALL'], true, true])
  })

  it('starts ten new sites one after another, each answering 200', async () => {
    // How fast is measured by bench/provision.ts, not here: a timed assertion on a shared CI
    // machine fails for reasons that are not Berth's.
    try {
      for (let i = 0; i < 10; i++) {
        const ep = await runtime.ensureSite(spec(`fast${i}`))
        expect((await firstAnswer(ep)).status).toBe(200)
      }
    } finally {
      await Promise.all(Array.from({ length: 10 }, (_, i) => runtime.removeSite(`fast${i}`, { volume: true })))
    }
  }, 120_000)

  it('ensures many sites at once, each on its own subnet, while another instance does too', async () => {
    // Two instances race for the same free blocks; the engine refuses the loser's overlapping
    // subnet and it moves on to the next one.
    const eps = await Promise.all([
      ...Array.from({ length: 4 }, (_, i) => runtime.ensureSite(spec(`many${i}`))),
      ...Array.from({ length: 4 }, (_, i) => neighbour.ensureSite(spec(`many${i}`))),
    ])
    expect(new Set(eps.map((e) => e.address)).size).toBe(8)
    for (const ep of eps) expect((await firstAnswer(ep)).status).toBe(200)
  }, 60_000)

  it('prepares a reserved site: network and volume first, container later on them, all removable', async () => {
    await runtime.prepareSite({ siteId: 'id-prepared', slug: 'prepared', diskGb: 1 })
    await runtime.prepareSite({ siteId: 'id-prepared', slug: 'prepared', diskGb: 1 })
    const filters = { label: [`${LABEL.instance}=${instanceId}`, `${LABEL.slug}=prepared`] }
    expect(await docker.listNetworks({ filters })).toHaveLength(1)
    expect((await docker.listVolumes({ filters })).Volumes).toHaveLength(1)
    expect(await docker.listContainers({ all: true, filters })).toHaveLength(0)
    const ep = await runtime.ensureSite(spec('prepared'))
    expect((await firstAnswer(ep)).status).toBe(200)
    expect(await docker.listNetworks({ filters })).toHaveLength(1)
    await runtime.removeSite('prepared', { volume: true })
    expect(await docker.listNetworks({ filters })).toHaveLength(0)
    expect((await docker.listVolumes({ filters })).Volumes ?? []).toHaveLength(0)
  })

  it('starts an exec that lands in a freeze once the site thaws, and holds nothing while the command runs', async () => {
    const ep = await runtime.ensureSite(spec('frozen'))
    let during: Promise<ExecResult> | undefined
    let settled = false
    await runtime.withSitePaused('frozen', async () => {
      expect((await docker.getContainer(ep.containerId).inspect()).State.Paused).toBe(true)
      // Frozen is not down: the edge keeps its endpoint and the visitor waits for the thaw.
      expect(await runtime.inspectSite('frozen')).toMatchObject({ running: true, endpoint: ep })
      // Not awaited here: fn must not wait for a call that waits for the thaw.
      during = runtime.exec('frozen', ['sh', '-c', 'echo thawed'])
      void during.then(() => (settled = true), () => (settled = true))
      await Bun.sleep(300)
      expect(settled).toBe(false)
    })
    expect(await during!).toEqual({ exitCode: 0, output: 'thawed\n' })

    // A long command (a deploy hook) does not keep the site's lock: ensureSite, queued behind
    // its start, answers while it still runs.
    let finished = false
    const long = runtime.exec('frozen', ['sleep', '5'], { timeoutMs: 30_000 })
    void long.then(() => (finished = true), () => (finished = true))
    expect(await runtime.ensureSite(spec('frozen'))).toEqual(ep)
    expect(finished).toBe(false)
    expect((await long).exitCode).toBe(0)
    await runtime.removeSite('frozen', { volume: true })
  }, 30_000)

  it('never leaves a site frozen when commands and freezes race', async () => {
    // Before an exec held the site's lock until its process existed, a freeze landing between
    // the engine's answer to start and runc's set-up left the site paused for good.
    const ep = await runtime.ensureSite(spec('race'))
    expect((await firstAnswer(ep)).status).toBe(200)
    for (let round = 0; round < 30; round++) {
      const execs = Array.from({ length: 4 }, () => runtime.exec('race', ['sh', '-c', 'echo ran']))
      const freeze = Bun.sleep(round % 5).then(() => runtime.withSitePaused('race', () => Bun.sleep(10)))
      const results = await Promise.all([freeze, ...execs])
      expect(results.slice(1).map((r) => (r as { output: string }).output)).toEqual(['ran\n', 'ran\n', 'ran\n', 'ran\n'])
    }
    expect((await docker.getContainer(ep.containerId).inspect()).State.Paused).toBe(false)
    await runtime.removeSite('race', { volume: true })
  }, 60_000)

  it('reports a taken SSH host port as HostPortTakenError, and starts once the port is free', async () => {
    const holder = Bun.listen({ hostname: '0.0.0.0', port: 0, socket: { data() {} } })
    const port = holder.port
    try {
      const err = await runtime.ensureSite(spec('porty', { sshPort: port })).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(HostPortTakenError)
      expect((err as HostPortTakenError).port).toBe(port)
    } finally {
      holder.stop(true)
    }
    const ep = await runtime.ensureSite(spec('porty', { sshPort: port }))
    expect((await runtime.inspectSite('porty'))?.running).toBe(true)
    expect(ep.port).toBe(8080)
    await runtime.removeSite('porty', { volume: true })
  }, 60_000)

  it('reports an engine that is not there as RuntimeUnavailableError', async () => {
    const down = new DockerRuntime({ socketPath: join(tmpdir(), 'no-docker-here.sock'), instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 128, log })
    expect(await down.ping()).toBe(false)
    await expect(down.ensureSite(spec('delta'))).rejects.toBeInstanceOf(RuntimeUnavailableError)
    await expect(down.listManaged()).rejects.toBeInstanceOf(RuntimeUnavailableError)
    expect(await runtime.ping()).toBe(true)
  })

  it('answers ping with false within seconds when the engine accepts but never answers', async () => {
    const path = join(tmpdir(), `hung-${instanceId}.sock`)
    const hung = Bun.listen({ unix: path, socket: { data() {} } })
    try {
      const started = performance.now()
      const stuck = new DockerRuntime({ socketPath: path, instanceId, subnetPool: '10.231.0.0/16', pidsLimit: 128, log })
      expect(await stuck.ping()).toBe(false)
      expect(performance.now() - started).toBeLessThan(5000)
    } finally {
      hung.stop(true)
      rmSync(path, { force: true })
    }
  })
})
