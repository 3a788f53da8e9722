import Docker from 'dockerode'
import { spawnSync } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'
import { GIB, SiteDisks } from './site-disks'
import type { Engine } from './site-runtime'

/**
 * The disks helper's command channel on the machine's engine: after the first call (an exec),
 * verbs are answered through the channel with no exec at all, many at once each with its own
 * answer, and a helper killed in the middle of a verb costs nothing but time: the verb runs
 * through an exec instead, and the channel comes back. The engine is given as a node's (the
 * path a node's engine takes: this box's own is measured with statfs, without the helper).
 */
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const instanceId = `t${Math.random().toString(36).slice(2, 8)}`
const log = memoryLogger()
const disks = new SiteDisks({ instanceId, log, imageOn: async () => 'berth/static:1' })
const engine = { nodeId: 'n1', node: { id: 'n1' }, docker, bulk: docker, address: '/var/run/docker.sock', key: 'local' } as unknown as Engine
const labels = { 'dev.berth.instance': instanceId }
const helperName = `berth-${instanceId}-disks`

async function volume(name: string): Promise<string> {
  await docker.createVolume({ Name: `${instanceId}-${name}`, Labels: labels })
  return `${instanceId}-${name}`
}

async function until(what: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms
  while (!what()) {
    if (Date.now() > end) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** The execs the engine makes in the helper while `work` runs (its event stream, exec_create). */
async function execsDuring(work: () => Promise<void>): Promise<number> {
  const helperId = (await docker.getContainer(helperName).inspect()).Id
  const since = (Date.now() / 1000).toFixed(3)
  await work()
  const until = Math.ceil(Date.now() / 1000) + 1
  const out = spawnSync('docker', ['events', '--since', since, '--until', String(until), '--filter', 'type=container', '--format', '{{.Actor.ID}} {{.Action}}'], { encoding: 'utf8' })
  return out.stdout.split('\n').filter((l) => l.startsWith(`${helperId} exec_create`)).length
}

beforeAll(async () => {
  expect(spawnSync('docker', ['image', 'inspect', 'berth/static:1'], { stdio: 'ignore' }).status, 'berth images build first').toBe(0)
})
afterAll(async () => {
  disks.close()
  await removeEngineInstance(docker, instanceId)
})

describe('the disks channel', () => {
  it('answers verbs after the first through the channel, without an exec, many at once, each its own answer', async () => {
    const names = await Promise.all([1, 2, 3, 4, 5].map((i) => volume(`many${i}`)))
    expect(await disks.ensure(engine, names[0]!, 1)).toBe('made')
    await until(() => disks.channelOpen(engine))
    const execs = await execsDuring(async () => {
      // Disks of 1 to 5 GiB, made at once.
      expect(await Promise.all(names.map((n, i) => disks.ensure(engine, n, i + 1)))).toEqual(['present', 'made', 'made', 'made', 'made'])
      // Twenty at once, of five sizes: each answer is its own volume's.
      const asked = Array.from({ length: 20 }, (_, i) => i % 5)
      const figures = await Promise.all(asked.map((i) => disks.usage(engine, names[i]!, 0)))
      figures.forEach((f, k) => expect(Math.abs(f!.usedBytes + f!.availableBytes - (asked[k]! + 1) * GIB)).toBeLessThan(GIB / 100))
      expect(await Promise.all(names.map((n) => disks.mounted(engine, n)))).toEqual([true, true, true, true, true])
    })
    expect(execs).toBe(0)
    // Each verb's processes are reaped: none left behind in the helper (a loop of thousands would run out of pids).
    const pid = (await docker.getContainer(helperName).inspect()).State.Pid
    expect(spawnSync('ps', ['-o', 'stat=', '--ppid', String(pid)], { encoding: 'utf8' }).stdout.trim()).toBe('')
  }, 60_000)

  it('carries an error and its exit code through the channel (a resize refused: the files use more)', async () => {
    const name = await volume('small')
    await disks.ensure(engine, name, 1)
    await until(() => disks.channelOpen(engine))
    spawnSync('fallocate', ['-l', '300M', `${(await docker.getVolume(name).inspect()).Mountpoint}/big`])
    const err = await disks.resize(engine, name, 0.25).catch((e) => e)
    expect(err).toHaveProperty('usedBytes')
    expect((err as { usedBytes: number }).usedBytes).toBeGreaterThan(300 * 1024 * 1024)
  }, 30_000)

  it('runs a verb through an exec when the helper is killed in the middle of it, and opens the channel again', async () => {
    const name = await volume('killed')
    await disks.ensure(engine, name, 1)
    await until(() => disks.channelOpen(engine))
    // A container holding the disk makes an offline resize wait a second for it, then refuse (busy).
    const holder = await docker.createContainer({ Image: 'berth/static:1', Entrypoint: ['sleep'], Cmd: ['600'], Labels: labels, HostConfig: { Mounts: [{ Type: 'volume', Source: name, Target: '/data' }] } })
    await holder.start()
    try {
      const resizing = disks.resize(engine, name, 2).catch((e) => e)
      await new Promise((r) => setTimeout(r, 300))
      await docker.getContainer(helperName).kill()
      const err = await resizing
      expect(String(err)).toMatch(/busy/)
      expect(log.lines.some((e) => e.msg === 'the disks channel broke; the verb runs through an exec')).toBe(true)
      expect(await disks.mounted(engine, name)).toBe(true)
      await until(() => disks.channelOpen(engine))
      const execs = await execsDuring(async () => {
        expect(await disks.mounted(engine, name)).toBe(true)
        expect(Math.abs((await disks.usage(engine, name, 0))!.availableBytes + (await disks.usage(engine, name, 0))!.usedBytes - GIB)).toBeLessThan(GIB / 100)
      })
      expect(execs).toBe(0)
    } finally {
      await holder.remove({ force: true })
    }
  }, 60_000)
})
