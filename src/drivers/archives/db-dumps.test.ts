import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { appendDumps, dumpReader, dumpWriter, freshDumps, readManifest, takeDumps, writeManifest } from './db-dumps'
import { replaceHome, scanTar, tarHome } from './home-tar'

/**
 * The databases' dumps in a home's tarball (issue 40 item 3) with GNU tar on the host: appended
 * under `./.berth-databases/`, taken out before the home's files go back; a site's own folder of
 * that name is neither archived, nor taken for dumps, nor replaced; a dump that is not a regular
 * file is never read.
 */
const dir = mkdtempSync(join(tmpdir(), 'berth-dumps-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function write(folder: string, file: string, text: string) {
  const out = dumpWriter(folder, file)
  await new Promise<void>((done, fail) => {
    out.on('error', fail)
    out.end(text, done)
  })
}

describe('dumps in a tarball', () => {
  it('go in after the files and come out before them; the site\'s own .berth-databases is neither archived, nor taken, nor replaced', async () => {
    const home = join(dir, 'home')
    mkdirSync(join(home, 'public'), { recursive: true })
    mkdirSync(join(home, '.berth-databases'))
    writeFileSync(join(home, 'public', 'index.html'), 'then')
    writeFileSync(join(home, '.berth-databases', 'manifest.json'), '{"format":1,"databases":[{"name":"main","engine":"postgres","file":"main.postgres"}]}')
    const tar = join(dir, 'home.tar')
    await tarHome(home, tar)
    const work = join(dir, 'made')
    await freshDumps(work)
    await write(work, 'main.postgres', 'PGDMP the real dump')
    await writeManifest(work, { format: 1, databases: [{ name: 'main', engine: 'postgres', file: 'main.postgres', bytes: 19 }] })
    await appendDumps(tar, work)
    expect(await scanTar(tar)).toEqual({ files: 3, bytes: 4 + 19 + JSON.stringify({ format: 1, databases: [{ name: 'main', engine: 'postgres', file: 'main.postgres', bytes: 19 }] }).length })

    writeFileSync(join(home, 'public', 'index.html'), 'now')
    writeFileSync(join(home, '.berth-databases', 'mine'), 'the site\'s')
    const out = join(dir, 'taken')
    expect(await takeDumps(tar, out)).toBe(true)
    expect(await readManifest(out)).toEqual({ format: 1, databases: [{ name: 'main', engine: 'postgres', file: 'main.postgres', bytes: 19 }] })
    expect(await new Response(await dumpReader(out, 'main.postgres') as unknown as ReadableStream).text()).toBe('PGDMP the real dump')
    // What is left is the home's files alone, which replaceHome takes.
    expect(await scanTar(tar)).toEqual({ files: 1, bytes: 4 })
    await replaceHome(home, tar)
    expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('then')
    expect(readFileSync(join(home, '.berth-databases', 'mine'), 'utf8')).toBe('the site\'s')
  })

  it('an archive without dumps has none to take; a dump that is a link is never read', async () => {
    const home = join(dir, 'plain')
    mkdirSync(home)
    writeFileSync(join(home, 'a'), 'a')
    const tar = join(dir, 'plain.tar')
    await tarHome(home, tar)
    expect(await takeDumps(tar, join(dir, 'none'))).toBe(false)
    expect(await readManifest(join(dir, 'none'))).toBeNull()

    const forged = join(dir, 'forged')
    await freshDumps(forged)
    symlinkSync('/etc/hostname', join(forged, '.berth-databases', 'main.postgres'))
    await writeManifest(forged, { format: 1, databases: [{ name: 'main', engine: 'postgres', file: 'main.postgres', bytes: 1 }] })
    await appendDumps(tar, forged)
    const out = join(dir, 'forged-out')
    expect(await takeDumps(tar, out)).toBe(true)
    await expect(dumpReader(out, 'main.postgres')).rejects.toThrow('not a file')
  })
})
