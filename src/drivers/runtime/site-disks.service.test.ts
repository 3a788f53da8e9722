import Docker from 'dockerode'
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { memoryLogger } from '../../lib/logger'
import { removeEngineInstance } from '../../../test/helpers/engine-instance'
import { GIB, SiteDisks } from './site-disks'
import { DiskTooSmallError } from './types'

/**
 * The disks driver on the machine's engine, through its helper container: a volume's disk made,
 * measured, resized both ways, refused below what it holds, and released without a trace; and a
 * plain volume's files (a site from before disks) carried into its disk.
 */
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const instanceId = `t${Math.random().toString(36).slice(2, 8)}`
const disks = new SiteDisks({ instanceId, log: memoryLogger(), imageOn: async () => 'berth/static:1' })
const engine = { nodeId: 'control', node: null, docker, bulk: docker, address: '/var/run/docker.sock', key: 'local' }
const labels = { 'dev.berth.instance': instanceId }

async function volume(name: string): Promise<string> {
  await docker.createVolume({ Name: `${instanceId}-${name}`, Labels: labels })
  return `${instanceId}-${name}`
}
const folderOf = async (name: string) => dirname((await docker.getVolume(name).inspect()).Mountpoint)
const loopBacking = (folder: string) => spawnSync('losetup', ['-a'], { encoding: 'utf8' }).stdout.includes(folder)

beforeAll(async () => {
  const built = spawnSync('docker', ['image', 'inspect', 'berth/static:1'], { stdio: 'ignore' })
  expect(built.status, 'berth images build first').toBe(0)
})
afterAll(() => removeEngineInstance(docker, instanceId))

describe('SiteDisks', () => {
  it('makes a disk whose used and available bytes add up to the limit, mounted over the volume, its own filesystem', async () => {
    const name = await volume('made')
    expect(await disks.mounted(engine, name)).toBe(false)
    expect(await disks.ensure(engine, name, 1)).toBe('made')
    expect(await disks.ensure(engine, name, 1)).toBe('present')
    expect(await disks.mounted(engine, name)).toBe(true)
    const figures = (await disks.usage(engine, name, GIB))!
    expect(Math.abs(figures.usedBytes + figures.availableBytes - GIB)).toBeLessThan(GIB / 200)
    const folder = await folderOf(name)
    expect(statSync(join(folder, '_data')).dev).not.toBe(statSync(folder).dev)
    // Empty, as a new volume is (the engine copies an image's home into it), owned by the site user.
    expect(spawnSync('ls', ['-A', join(folder, '_data')], { encoding: 'utf8' }).stdout).toBe('')
    expect(statSync(join(folder, '_data')).uid).toBe(1000)
    // Sparse: the image takes a fraction of its size on the host.
    expect(Number(spawnSync('du', ['-B1', join(folder, 'disk.img')], { encoding: 'utf8' }).stdout.split('\t')[0])).toBeLessThan(GIB / 10)
  })

  it('resizes up and down with the files kept, and refuses a size under what the files use, changing nothing', async () => {
    const name = await volume('resize')
    await disks.ensure(engine, name, 1)
    const data = join(await folderOf(name), '_data')
    writeFileSync(join(data, 'keep.txt'), 'kept')
    const fallocate = (size: string, file: string) => spawnSync('fallocate', ['-l', size, join(data, file)], { encoding: 'utf8' })
    expect(fallocate('1500M', 'over').stderr).toMatch(/No space left on device/)
    spawnSync('rm', ['-f', join(data, 'over')])
    expect(fallocate('600M', 'big').status).toBe(0)
    // The engine's container is stopped around an offline resize; here nothing uses the disk.
    await disks.bringTo(engine, name, 2, async () => {})
    let figures = (await disks.usage(engine, name, 2 * GIB))!
    expect(Math.abs(figures.usedBytes + figures.availableBytes - 2 * GIB)).toBeLessThan(GIB / 100)
    expect(readFileSync(join(data, 'keep.txt'), 'utf8')).toBe('kept')
    const grown = fallocate('1300M', 'big2')
    expect(grown.status, grown.stderr + spawnSync('df', ['-B1M', data], { encoding: 'utf8' }).stdout).toBe(0)
    spawnSync('rm', ['-f', join(data, 'big2')])
    // Down to 1 GiB: the 600 MB file fits.
    await disks.bringTo(engine, name, 1, async () => {})
    figures = (await disks.usage(engine, name, GIB))!
    expect(Math.abs(figures.usedBytes + figures.availableBytes - GIB)).toBeLessThan(GIB / 100)
    expect(readFileSync(join(data, 'keep.txt'), 'utf8')).toBe('kept')
    // Under what the files use (600 MB, more than a quarter GiB): refused, nothing changed.
    const tooSmall = await disks.bringTo(engine, name, 0.25, async () => { throw new Error('stopped the site for a refused resize') }).catch((e) => e)
    expect(tooSmall).toBeInstanceOf(DiskTooSmallError)
    expect((tooSmall as DiskTooSmallError).usedBytes).toBeGreaterThan(600 * 1024 * 1024)
    expect(readFileSync(join(data, 'keep.txt'), 'utf8')).toBe('kept')
    expect(await disks.mounted(engine, name)).toBe(true)
  }, 60_000)

  it("carries a plain volume's files into its disk, and removes the volume without a trace", async () => {
    const name = await volume('plain')
    const folder = await folderOf(name)
    writeFileSync(join(folder, '_data', 'old.txt'), 'from before disks')
    spawnSync('chown', ['1000:1000', join(folder, '_data', 'old.txt')])
    expect(await disks.ensure(engine, name, 1)).toBe('made')
    expect(readFileSync(join(folder, '_data', 'old.txt'), 'utf8')).toBe('from before disks')
    expect(statSync(join(folder, '_data', 'old.txt')).uid).toBe(1000)
    await disks.removeVolume(engine, name)
    expect(existsSync(folder)).toBe(false)
    expect(loopBacking(folder)).toBe(false)
  })

  it('leaves a container started on the folder beneath an unmounted disk nothing to write', async () => {
    const name = await volume('beneath')
    await disks.ensure(engine, name, 1)
    const data = join(await folderOf(name), '_data')
    expect(spawnSync('umount', [data]).status).toBe(0)
    expect(spawnSync('sh', ['-c', `touch ${data}/x`]).status).not.toBe(0)
    expect(await disks.ensure(engine, name, 1)).toBe('mounted')
  })
})
