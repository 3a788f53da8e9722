import { linkSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ManualClock } from '../../lib/clock'
import { measureDiskUsage } from './disk-usage'
import { TtlCache } from '../../domain/metrics/ttl-cache'

const dir = mkdtempSync(join(tmpdir(), 'du-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const du = (path: string) => Number(new TextDecoder().decode(Bun.spawnSync(['du', '-s', '-B1', path]).stdout).split('\t')[0])

describe('measureDiskUsage', () => {
  it('agrees with du -s, counting hard links once and never following symlinks', async () => {
    const home = join(dir, 'home')
    mkdirSync(join(home, 'public', 'deep', 'er'), { recursive: true })
    writeFileSync(join(home, 'public', 'index.html'), 'x'.repeat(10_000))
    writeFileSync(join(home, 'public', 'deep', 'er', 'big.bin'), new Uint8Array(300_000).fill(1))
    linkSync(join(home, 'public', 'deep', 'er', 'big.bin'), join(home, 'public', 'hardlink.bin'))
    // Symlinks to a large host folder and file: their targets must not count.
    const outside = join(dir, 'outside')
    mkdirSync(outside)
    writeFileSync(join(outside, 'huge'), new Uint8Array(2_000_000).fill(1))
    symlinkSync(outside, join(home, 'public', 'escape'))
    symlinkSync(join(outside, 'huge'), join(home, 'huge-link'))
    const measured = await measureDiskUsage(home)
    expect(measured.complete).toBe(true)
    expect(measured.bytes).toBe(du(home))
    expect(measured.bytes).toBeLessThan(1_000_000)
  })

  it('counts files and folders whose names are not UTF-8', async () => {
    const home = join(dir, 'latin1')
    mkdirSync(home)
    // 'caf\xe9' in Latin-1: a name a tenant's tools may well write, which is not UTF-8.
    const folder = Buffer.concat([Buffer.from(join(home, 'caf')), Buffer.from([0xe9])])
    mkdirSync(folder)
    writeFileSync(Buffer.concat([folder, Buffer.from('/menu-'), Buffer.from([0xff]), Buffer.from('.bin')]), new Uint8Array(200_000).fill(1))
    writeFileSync(Buffer.concat([Buffer.from(join(home, 'f')), Buffer.from([0xfe])]), new Uint8Array(100_000).fill(1))
    const measured = await measureDiskUsage(home)
    expect(measured).toEqual({ bytes: du(home), complete: true })
    expect(measured.bytes).toBeGreaterThan(300_000)
  })

  it('stops at its entry bound and says the result is a lower bound', async () => {
    const home = join(dir, 'many')
    mkdirSync(home)
    for (let i = 0; i < 50; i++) writeFileSync(join(home, `f${i}`), 'x'.repeat(5000))
    const bounded = await measureDiskUsage(home, { maxEntries: 10 })
    expect(bounded.complete).toBe(false)
    expect(bounded.bytes).toBeLessThan(du(home))
  })

  it('is cached per key for the time to live (TtlCache)', async () => {
    const home = join(dir, 'cached')
    mkdirSync(home)
    const clock = new ManualClock()
    const cache = new TtlCache<number>(clock, 60_000)
    const measure = () => cache.get('s', async () => (await measureDiskUsage(home)).bytes)
    const first = await measure()
    writeFileSync(join(home, 'new'), new Uint8Array(100_000).fill(1))
    expect(await measure()).toBe(first)
    clock.advance(60_000)
    expect(await measure()).toBeGreaterThan(first)
  })
})
