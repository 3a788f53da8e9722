import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { offsiteSetup, type OffsiteSetup } from '../../../test/helpers/offsite'
import { buildOffsite } from '../../compose/offsite'
import { FolderDestination } from '../../drivers/offsite/folder'
import { openBytes } from '../../drivers/offsite/age'
import { destinationOf } from '../../drivers/offsite/select'
import { checkManifest } from './manifest'
import { offsiteStatus } from './status'

/**
 * The copier on a real store, archive store, age keys and FolderDestination (test/helpers/offsite.ts):
 * what an archive's copy goes through, from the hook to the object a hoster opens with `age`.
 */
const SECOND = 1000
const statusOf = (s: OffsiteSetup) => offsiteStatus(s.repo, { now: s.t.clock.now(), destination: s.config.offsite.url, intervalSeconds: 300 })
/** The copy row of an archive, if any. */
const copyOf = (s: OffsiteSetup, archiveId: string) => s.t.store.sqlite.query<{ status: string; attempts: number }, [string]>('select status, attempts from offsite_copies where archive_id = ?').get(archiveId)

describe('archive copies', () => {
  it('an archive that turns ready is queued, copied sealed for the hoster, and opens to the local bytes', async () => {
    const s = await offsiteSetup()
    const site = s.site()
    const bytes = crypto.getRandomValues(new Uint8Array(3 * 1024 * 1024 + 5))
    const a = await s.archive(site.id, bytes)
    // The hook queued it at once (a pass then runs in the background).
    expect(copyOf(s, a.id)?.status).toBe('pending')
    await s.copier.idle()
    const row = s.repo.newest('archive', ['copied'])!
    expect(row).toMatchObject({ archiveId: a.id, key: a.key, status: 'copied', bytes: bytes.byteLength, attempts: 0, lastError: null })
    expect(row.sha256).toBe(new Bun.CryptoHasher('sha256').update(bytes).digest('hex'))
    expect(s.objects('archives/')).toEqual([a.key])
    expect(Buffer.from(await s.open(a.key)).equals(bytes)).toBe(true)
    expect(s.repo.copiedArchiveIds([a.id, crypto.randomUUID()])).toEqual(new Set([a.id]))
    // The first pass copied the store too, with its manifest.
    expect(s.objects('store/')).toHaveLength(1)
    expect(s.objects('manifests/')).toHaveLength(1)
    expect(statusOf(s)).toMatchObject({ enabled: true, archives: { pending: 0, deleting: 0 }, last_error: null, stale: false })
  })

  it('archives made while copies were off, or missed by the hook, are queued by the next pass', async () => {
    const s = await offsiteSetup()
    const site = s.site()
    s.hang()
    const a = await s.archive(site.id)
    // As if the hook never ran: the row is gone, the archive ready.
    s.t.store.sqlite.prepare('delete from offsite_copies').run()
    s.hang(false)
    const again = s.build()
    const pass = await again.copier.runNow()
    expect(pass.failures).toEqual([])
    expect(s.objects('archives/')).toEqual([a.key])
  })

  it('a copy cut short (Berth killed mid-put) stays pending, is never listed, and is put again from scratch after a restart', async () => {
    const s = await offsiteSetup()
    await s.copier.runNow()
    const site = s.site()
    s.hang()
    const a = await s.archive(site.id)
    // The put has written its first chunk to a partial file and waits: the moment of the kill.
    const folder = join(s.root, 'archives', site.id)
    for (let i = 0; i < 200 && !(existsSync(folder) && readdirSync(folder).some((n) => n.includes('.partial'))); i++) await Bun.sleep(10)
    expect(readdirSync(folder).filter((n) => n.includes('.partial'))).toHaveLength(1)
    expect(s.repo.newest('archive', ['pending', 'copied'])).toMatchObject({ status: 'pending', archiveId: a.id })
    expect(s.objects('archives/')).toEqual([])

    // The next process (a copier of its own on the same store) finds the row and puts it whole.
    s.hang(false)
    const restarted = s.build()
    const pass = await restarted.copier.runNow()
    expect(pass).toMatchObject({ copied: 1, failures: [] })
    expect(s.objects('archives/')).toEqual([a.key])
    expect((await s.open(a.key)).byteLength).toBe(200_000)
  })

  it('an unreachable destination blocks nothing: copies wait with the reason and back-off, deletions go on locally, and all completes once it is back', async () => {
    const s = await offsiteSetup()
    const site = s.site()
    const kept = await s.archive(site.id)
    await s.copier.idle()
    // The mounted folder goes away (an unmounted share).
    renameSync(s.root, `${s.root}-away`)
    const a = await s.archive(site.id)
    await s.copier.idle()
    const row = () => s.repo.newest('archive', ['pending', 'copied', 'deleting'])!
    expect(row()).toMatchObject({ archiveId: a.id, status: 'pending', attempts: 1, nextAttemptAt: s.t.clock.now() + 30 * SECOND })
    expect(row().lastError).toContain('is not a folder on this box')
    const status = statusOf(s)
    expect(status.archives.pending).toBe(1)
    expect(status.last_error?.message).toContain('is not a folder on this box')

    // Not tried again before its time; then again, with twice the wait.
    await s.copier.runNow()
    expect(row().attempts).toBe(1)
    s.t.clock.advance(30 * SECOND)
    await s.copier.runNow()
    expect(row()).toMatchObject({ attempts: 2, nextAttemptAt: s.t.clock.now() + 60 * SECOND })

    // The local archive is removed at once whatever the destination does; its copy is queued to go.
    const started = performance.now()
    expect(await s.retention.discard(s.archivesRepo.find(kept.id)!, ['ready'])).toBe(true)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(copyOf(s, kept.id)?.status).toBe('deleting')

    renameSync(`${s.root}-away`, s.root)
    s.t.clock.advance(60 * SECOND)
    const pass = await s.copier.runNow()
    expect(pass.failures).toEqual([])
    expect(s.objects('archives/')).toEqual([a.key])
    expect(statusOf(s)).toMatchObject({ archives: { pending: 0, deleting: 0 }, last_error: null })
  })

  it('an archive that hangs at the destination holds neither the archive job nor a local deletion', async () => {
    const s = await offsiteSetup()
    await s.copier.runNow()
    const site = s.site()
    s.hang()
    const started = performance.now()
    const a = await s.archive(site.id)
    expect(await s.retention.discard(s.archivesRepo.find(a.id)!, ['ready'])).toBe(true)
    expect(performance.now() - started).toBeLessThan(1000)
    expect(existsSync(join(s.config.archives.dir, a.storageKey))).toBe(false)
  })

  it('pruning follows the local retention: the copies of discarded backups are deleted off the box', async () => {
    const s = await offsiteSetup()
    const site = s.site()
    const made = []
    for (let i = 0; i < 3; i++) {
      made.push(await s.archive(site.id))
      s.t.clock.advance(SECOND)
    }
    await s.copier.idle()
    expect(s.objects('archives/')).toEqual(made.map((a) => a.key).sort())
    expect(await s.retention.pruneBackups(site.id, 2)).toBe(1)
    await s.copier.idle()
    expect(s.objects('archives/')).toEqual(made.slice(1).map((a) => a.key).sort())
    expect(copyOf(s, made[0]!.id)).toBeNull()
  })
})

describe('a new destination', () => {
  it('offsite.url changed: every archive is copied again to the new destination, the status and the backup list say so until it is, and its manifest names only what it holds', async () => {
    const s = await offsiteSetup()
    const site = s.site()
    const a = await s.archive(site.id)
    await s.copier.idle()
    expect(s.repo.copiedArchiveIds([a.id])).toEqual(new Set([a.id]))
    const elsewhere = mkdtempSync(join(tmpdir(), 'berth-offsite-moved-'))
    onTestFinished(() => rmSync(elsewhere, { recursive: true, force: true }))
    const config = { ...s.config, offsite: { ...s.config.offsite, url: `file://${elsewhere}` } }
    const core = { config, store: s.t.store, clock: s.t.clock, log: s.t.log, instanceId: 'test1234', repo: s.repo }

    // Berth started with the new url: nothing is at the new destination yet, and it says so.
    const moved = buildOffsite(core)!
    expect(s.t.logged('the off-box destination changed: every archive is copied again to the new one, with the store and a manifest; the copies at the old one are left as they are')).toBe(true)
    expect(s.repo.copiedArchiveIds([a.id])).toEqual(new Set())
    expect(offsiteStatus(s.repo, { now: s.t.clock.now(), destination: config.offsite.url, intervalSeconds: 300 })).toMatchObject({ last_store_copy: null, last_manifest: null, archives: { pending: 1, deleting: 0 }, others: { pending: 0, deleting: 0 }, last_error: null })

    const pass = await moved.copier.runNow()
    expect(pass).toMatchObject({ copied: 1, failures: [] })
    const there = new FolderDestination(elsewhere)
    expect((await there.list('archives/')).map((o) => o.key)).toEqual([a.key])
    // Each manifest there names only what the destination held when it was made: the first pass
    // copies the store before the archives; the next copy of the store names the archive.
    const manifestThere = async () => {
      const key = (await there.list('manifests/')).map((o) => o.key).sort().at(-1)!
      return checkManifest(JSON.parse(new TextDecoder().decode(await openBytes(new Uint8Array(readFileSync(join(elsewhere, key))), [s.hoster]))))
    }
    expect((await manifestThere()).sites.find((m) => m.id === site.id)?.archives).toEqual([])
    s.t.clock.advance(SECOND)
    expect((await moved.copier.push()).failures).toEqual([])
    const manifest = await manifestThere()
    expect(manifest.sites.find((m) => m.id === site.id)?.archives.map((x) => x.key)).toEqual([a.key])
    expect((await there.list('store/')).map((o) => o.key)).toContain(manifest.store.key)
    // The old destination keeps what it had; Berth no longer looks after it.
    expect(s.objects('archives/')).toEqual([a.key])

    // Started again with the same url: nothing is made again.
    buildOffsite(core)
    expect(s.repo.copiedArchiveIds([a.id])).toEqual(new Set([a.id]))
    // What names a destination: the url, and for S3 the endpoint's host (a bucket name can be at two services); never the key.
    expect(destinationOf({ url: 's3://b/box/', endpoint: 'https://s3.eu-central-003.backblazeb2.com/' })).toBe('s3://b/box at s3.eu-central-003.backblazeb2.com')
    expect(destinationOf({ url: 's3://b/box', endpoint: '' })).not.toBe(destinationOf({ url: 's3://b/box', endpoint: 'http://127.0.0.1:9000' }))
  })
})

describe('stop', () => {
  it('copies the store at shutdown, and gives up after the bound with a log line when the destination hangs', async () => {
    const s = await offsiteSetup()
    await s.copier.runNow()
    s.t.clock.advance(10 * SECOND)
    await s.copier.stop(5000)
    expect(s.objects('manifests/')).toHaveLength(2)

    const hung = await offsiteSetup()
    await hung.copier.runNow()
    hung.hang()
    const started = performance.now()
    await hung.copier.stop(300)
    expect(performance.now() - started).toBeLessThan(2000)
    expect(hung.t.logged('the store copy at shutdown did not finish within 0.3 s; Berth stops without it (the last copy off the box is older)')).toBe(true)
    expect(readFileSync(join(hung.t.dir, 'berth.db')).byteLength).toBeGreaterThan(0)
  })
})
