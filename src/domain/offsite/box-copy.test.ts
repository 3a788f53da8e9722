import { Database } from 'bun:sqlite'
import { readdirSync, readFileSync, statSync, truncateSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { offsiteSetup } from '../../../test/helpers/offsite'
import { checkManifest, timeOfStamp } from './manifest'
import { verifyManifest } from './signing'
import { BoxKeyFile } from '../../drivers/secrets/box-key'

/** The store, tls and manifest copies (box-copy.ts), the restore drill, and the age check. */
const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
const sha256 = (bytes: Uint8Array | string) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

describe('the store copy', () => {
  it('is a valid SQLite database with the same rows as the store once opened and decompressed, and leaves no work file behind', async () => {
    const s = await offsiteSetup()
    const site = s.site('shop')
    await s.archive(site.id)
    await s.copier.idle()
    const store = s.repo.newest('store', ['copied'])!
    expect(s.objects('store/')).toEqual([store.key])
    const file = await s.storeCopyFile(store.key)
    const copy = new Database(file, { readonly: true })
    try {
      expect(copy.query('pragma integrity_check').get()).toEqual({ integrity_check: 'ok' })
      for (const table of ['sites', 'accounts', 'plans', 'archives', 'berth_migrations']) {
        const count = `select count(*) as n from ${table}`
        expect(copy.query(count).get(), table).toEqual(s.t.store.sqlite.query(count).get())
      }
      expect(copy.query("select slug from sites").all()).toEqual([{ slug: 'shop' }])
      // The box's identity travels with the store (the drill of a rebuilt box reads old copies).
      expect(copy.query("select value from settings where key = 'offsite_box_identity'").get()).toEqual({ value: await s.offsite.identity.identity() })
    } finally {
      copy.close()
    }
    expect(readdirSync(join(s.t.dir, 'offsite-work'))).toEqual([])
    expect(statSync(join(s.t.dir, 'offsite-work')).mode & 0o777).toBe(0o700)
  })

  it('is made every interval, and again after a failure with back-off, with no half-made copy listed', async () => {
    const s = await offsiteSetup({ intervalSeconds: 300 })
    await s.copier.runNow()
    await s.copier.runNow()
    expect(s.objects('store/')).toHaveLength(1)
    s.t.clock.advance(300_000)
    await s.copier.runNow()
    expect(s.objects('store/')).toHaveLength(2)
    s.fail('the bucket is gone')
    s.t.clock.advance(300_000)
    const failed = await s.copier.runNow()
    expect(failed.failures).toEqual([{ key: 'store', error: 'the bucket is gone' }])
    const manifest = s.repo.newest('manifest', ['pending'])!
    expect(manifest).toMatchObject({ lastError: 'the bucket is gone', attempts: 1, nextAttemptAt: s.t.clock.now() + 30_000 })
    s.fail(null)
    s.t.clock.advance(30_000)
    expect((await s.copier.runNow()).failures).toEqual([])
    expect(s.objects('store/')).toHaveLength(3)
    // The failed attempt's rows were let go and deleted (there was nothing to delete).
    expect(s.repo.boxCopies(['pending', 'deleting'])).toEqual([])
  })
})

describe('the manifest', () => {
  it("carries the box key of the sites' secrets, signed with the rest, once the box has one (null before)", async () => {
    const s = await offsiteSetup()
    const manifestOf = async (key: string) => verifyManifest(JSON.parse(new TextDecoder().decode(await s.open(key))), { publicKey: s.offsite.signing.publicKey(), acceptUnsigned: false }).manifest
    const before = await s.copier.runNow()
    expect(checkManifest(await manifestOf(before.manifest!)).secrets_key).toBeNull()
    const keyFile = join(s.t.dir, 'secrets.key')
    new BoxKeyFile(keyFile).seal('a secret', { siteId: 'site', name: 'TOKEN' })
    s.t.clock.advance(300_000)
    const after = await s.copier.runNow()
    const manifest = checkManifest(await manifestOf(after.manifest!))
    expect(manifest.secrets_key).toBe(readFileSync(keyFile, 'utf8'))
  })

  it('names the store copy, the latest tls copy, and every site with its copied archives newest first, each with its plaintext digest', async () => {
    const s = await offsiteSetup()
    s.tlsFiles()
    const shop = s.site('shop')
    const blog = s.site('blog')
    const empty = s.site('empty')
    const older = await s.archive(shop.id, 'older bytes')
    s.t.clock.advance(MINUTE)
    const newer = await s.archive(shop.id, 'newer bytes', 'snapshot')
    const other = await s.archive(blog.id, 'blog bytes')
    await s.copier.idle()
    s.t.clock.advance(5 * MINUTE)
    const pass = await s.copier.runNow()
    const parsed: unknown = JSON.parse(new TextDecoder().decode(await s.open(pass.manifest!)))
    // Signed by the box's key, whose public half berth offsite status prints.
    const verified = verifyManifest(parsed, { publicKey: s.offsite.signing.publicKey(), acceptUnsigned: false })
    expect(verified.signed).toBe(true)
    const manifest = checkManifest(verified.manifest)
    const store = s.repo.newest('store', ['copied'])!
    const tls = s.repo.newest('tls', ['copied'])!
    expect(manifest).toMatchObject({
      format: 2, key: pass.manifest, made_at: new Date(store.madeAt).toISOString(), instance_id: 'test1234', sites_domain: s.config.sites.domain,
      store: { key: store.key, sha256: store.sha256, bytes: store.bytes },
      tls: { key: tls.key, sha256: tls.sha256, bytes: tls.bytes },
    })
    expect(timeOfStamp(pass.manifest!.slice('manifests/'.length))).toBe(store.madeAt)
    const bySlug = Object.fromEntries(manifest.sites.map((site) => [site.slug, site]))
    expect(Object.keys(bySlug).sort()).toEqual(['blog', 'empty', 'shop'])
    expect(bySlug.empty!.archives).toEqual([])
    expect(bySlug.shop!.archives.map((a) => [a.id, a.kind])).toEqual([[newer.id, 'snapshot'], [older.id, 'backup']])
    expect(bySlug.shop!.archives[1]).toEqual({ id: older.id, kind: 'backup', storage_key: older.storageKey, key: older.key, created_at: new Date(older.createdAt).toISOString(), sha256: sha256('older bytes'), bytes: 11 })
    expect(bySlug.blog!.archives.map((a) => a.id)).toEqual([other.id])
    expect(bySlug.shop).toMatchObject({ id: shop.id, status: 'active' })
    expect(bySlug.empty!.id).toBe(empty.id)
  })

  it('a tls copy is made only when the folder changed, and the tar opens to the certificates and the ACME account', async () => {
    const s = await offsiteSetup()
    await s.copier.runNow()
    expect(s.objects('tls/')).toEqual([])
    s.tlsFiles('first')
    s.t.clock.advance(5 * MINUTE)
    await s.copier.runNow()
    s.t.clock.advance(5 * MINUTE)
    await s.copier.runNow()
    expect(s.objects('tls/')).toHaveLength(1)
    s.tlsFiles('renewed certificate')
    s.t.clock.advance(5 * MINUTE)
    await s.copier.runNow()
    const tls = s.objects('tls/')
    expect(tls).toHaveLength(2)
    const tar = await s.open(s.repo.newest('tls', ['copied'])!.key)
    const listed = Bun.spawnSync(['tar', '-tf', '-'], { stdin: tar }).stdout.toString().trim().split('\n')
    expect(listed).toEqual(['certs/', 'certs/site.pem', 'acme/', 'acme/account.json'])
    expect(new TextDecoder().decode(tar)).toContain('renewed certificate')
  })
})

describe('retention of store, tls and manifest copies', () => {
  it('keeps every copy of the last day and the newest of each day for backups_kept days, and what a kept manifest names', async () => {
    const s = await offsiteSetup({ intervalSeconds: 6 * 3600, backupsKept: 3 })
    s.tlsFiles()
    // Five days, four store copies a day.
    for (let i = 0; i < 20; i++) {
      await s.copier.runNow()
      s.t.clock.advance(6 * HOUR)
    }
    await s.copier.runNow()
    await s.copier.runNow()
    const manifests = s.objects('manifests/')
    // The last 24 h (4 or 5 copies), and one for each of the days before within 3 days.
    const times = manifests.map((k) => timeOfStamp(k.slice('manifests/'.length))!)
    const now = s.t.clock.now()
    expect(times.filter((t) => now - t < DAY).length).toBeGreaterThanOrEqual(4)
    expect(times.filter((t) => now - t >= DAY).every((t) => now - t < 3 * DAY)).toBe(true)
    expect(manifests.length).toBeLessThan(9)
    expect(s.objects('store/')).toHaveLength(manifests.length)
    // The one tls copy, made on the first day, stays: every manifest names it.
    expect(s.objects('tls/')).toHaveLength(1)
    for (const key of manifests) {
      const m = checkManifest(JSON.parse(new TextDecoder().decode(await s.open(key))))
      expect(s.exists(m.store.key)).toBe(true)
      expect(s.exists(m.tls!.key)).toBe(true)
    }
  })
})

describe('the restore drill and the age check', () => {
  it('reads a copy back once a day and records whether it matched; a damaged copy is found and logged as an error', async () => {
    const s = await offsiteSetup()
    const a = await s.archive(s.site().id)
    await s.copier.idle()
    const drilled = s.repo.lastDrilled()!
    expect(drilled).toMatchObject({ archiveId: a.id, verifyError: null, verifiedAt: s.t.clock.now() })
    expect(s.t.logged('the restore drill read a copy back whole')).toBe(true)
    // Damaged off the box; not read again before a day has passed.
    truncateSync(join(s.root, a.key), 100)
    s.t.clock.advance(HOUR)
    await s.copier.runNow()
    expect(s.repo.lastDrilled()!.verifyError).toBeNull()
    s.t.clock.advance(DAY)
    await s.copier.runNow()
    expect(s.repo.lastDrilled()!.verifyError).toMatch(/^it could not be read back: /)
    expect(s.t.log.lines.some((l) => l.level === 'error' && String(l.msg).startsWith('the restore drill found a copy off the box that is not what was copied'))).toBe(true)
    expect(readFileSync(join(s.root, a.key)).byteLength).toBe(100)
  })

  it('logs an error each pass while the last store copy is older than three intervals', async () => {
    const s = await offsiteSetup({ intervalSeconds: 60 })
    await s.copier.runNow()
    s.fail('connection refused')
    const errors = () => s.t.log.lines.filter((l) => l.msg === 'the last store copy off the box is older than three intervals').length
    s.t.clock.advance(3 * MINUTE)
    await s.copier.runNow()
    expect(errors()).toBe(0)
    s.t.clock.advance(MINUTE)
    await s.copier.runNow()
    s.t.clock.advance(MINUTE)
    await s.copier.runNow()
    expect(errors()).toBe(2)
    expect(s.t.log.lines.find((l) => l.msg === 'the last store copy off the box is older than three intervals')).toMatchObject({ level: 'error', last_error: 'connection refused' })
  })
})
