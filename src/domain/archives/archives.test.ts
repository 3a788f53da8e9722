import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { RESTORE_ARCHIVE_JOB } from './jobs'
import { buyInProcess as buy, HomeRuntime } from '../../../test/helpers/home-runtime'
import { inProcess, type InProcess } from '../../../test/helpers/in-process'

/**
 * Snapshots and backups in-process: the real API, services, jobs, SQLite store, archive store
 * and GNU tar on real files, with a manual clock. The container runtime records calls and gives
 * each site a real home folder (test/archives.e2e.test.ts does the same on the binary and Docker).
 */
const DAY = 24 * 3600_000
const HOUR = 3600_000
const storedKeys = (h: InProcess, siteId: string) => {
  const dir = join(h.services.config.archives.dir, siteId)
  return existsSync(dir) ? readdirSync(dir) : []
}

describe('snapshots', () => {
  const runtime = new HomeRuntime()
  const h = inProcess({ runtime, env: { BERTH_ARCHIVES_SNAPSHOTS_PER_SITE: '3' } })
  afterAll(async () => {
    await h.close()
    runtime.close()
    rmSync(runtime.root, { recursive: true, force: true })
  })
  const path = (slug: string, rest = '') => `/api/v1/sites/${slug}/${rest}`

  it('takes a snapshot of a vps site while it is frozen, and restores it byte for byte with owners, modes and links', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_business_monthly')
    const home = await runtime.homePath(slug)
    const blob = crypto.getRandomValues(new Uint8Array(300_000))
    writeFileSync(join(home, 'public', 'blob.bin'), blob)
    writeFileSync(join(home, 'secret.txt'), 'mine')
    chmodSync(join(home, 'secret.txt'), 0o600)
    chownSync(join(home, 'secret.txt'), 1000, 1000)
    symlinkSync('public/index.html', join(home, 'link'))

    const taken = await h.call('POST', path(slug, 'snapshot/'), { key })
    expect(taken.status, taken.text).toBe(200)
    expect(taken.json.data).toMatchObject({ kind: 'snapshot', status: 'creating', size_bytes: null, file_count: null, completed_at: null, restored_at: null, error: null })
    await h.services.jobs.drain()
    expect(runtime.paused).toContain(slug)
    const id = taken.json.data.id
    const ready = await h.call('GET', path(slug, `snapshots/${id}/`), { key })
    // index.html, blob.bin, secret.txt: the logs are left out.
    expect(ready.json.data).toMatchObject({ id, status: 'ready', file_count: 3, error: null })
    expect(ready.json.data.size_bytes).toBeGreaterThan(300_000)
    expect(storedKeys(h, siteId)).toEqual([`${id}.tar.zst`])

    // Change, delete and add files; write a log line, which the restore must keep.
    writeFileSync(join(home, 'public', 'index.html'), 'defaced')
    rmSync(join(home, 'public', 'blob.bin'))
    rmSync(join(home, 'link'))
    writeFileSync(join(home, 'public', 'new.txt'), 'later')
    writeFileSync(join(home, 'logs', 'access.log'), 'GET / 200\nGET /new.txt 200\n')
    const restoring = await h.call('POST', path(slug, `snapshots/${id}/restore/`), { key })
    expect(restoring.status, restoring.text).toBe(200)
    expect(restoring.json.data.status).toBe('restoring')
    const again = await h.call('POST', path(slug, `snapshots/${id}/restore/`), { key })
    expect(again.status).toBe(409)
    const stopsBefore = runtime.callsOf('stopSite', slug).length
    await h.services.jobs.drain()

    const after = (await h.call('GET', path(slug, `snapshots/${id}/`), { key })).json.data
    expect(after.status).toBe('ready')
    expect(after.restored_at).toBe(new Date(h.clock.now()).toISOString())
    expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('<h1>hello</h1>')
    expect(new Uint8Array(readFileSync(join(home, 'public', 'blob.bin')))).toEqual(blob)
    expect(existsSync(join(home, 'public', 'new.txt'))).toBe(false)
    expect(lstatSync(join(home, 'link')).isSymbolicLink()).toBe(true)
    const secret = statSync(join(home, 'secret.txt'))
    expect([secret.uid, secret.gid, secret.mode & 0o777]).toEqual([1000, 1000, 0o600])
    expect(statSync(home).uid).toBe(1000)
    expect(readFileSync(join(home, 'logs', 'access.log'), 'utf8')).toContain('/new.txt')
    expect(readdirSync(home).filter((n) => n.startsWith('.berth'))).toEqual([])
    // Restarted, so no process keeps state from the old files.
    expect(runtime.callsOf('stopSite', slug).length).toBe(stopsBefore + 1)
    expect(runtime.callsOf('ensureSite', slug).length).toBeGreaterThan(1)
  })

  it('resumes a restore a crash cut short after the files were moved aside', async () => {
    const { slug, key } = await buy(h, 'svc_business_monthly')
    const home = await runtime.homePath(slug)
    const id = (await h.call('POST', path(slug, 'snapshot/'), { key })).json.data.id
    await h.services.jobs.drain()
    // As a crash would leave it: the previous files in Berth's root-owned folder, half an
    // archive in the home.
    const aside = join(home, '.berth-restore-previous')
    mkdirSync(aside, { mode: 0o700 })
    writeFileSync(join(aside, 'old.txt'), 'previous')
    writeFileSync(join(home, 'half.txt'), 'partial')
    await h.call('POST', path(slug, `snapshots/${id}/restore/`), { key })
    await h.services.jobs.drain()
    expect(readdirSync(home).sort()).toEqual(['logs', 'public'])
    expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('<h1>hello</h1>')
  })

  it('a folder of that name planted by the site is removed, never moved into', async () => {
    const { slug, key } = await buy(h, 'svc_business_monthly')
    const home = await runtime.homePath(slug)
    const id = (await h.call('POST', path(slug, 'snapshot/'), { key })).json.data.id
    await h.services.jobs.drain()
    const outside = mkdtempSync(join(tmpdir(), 'berth-outside-'))
    symlinkSync(outside, join(home, '.berth-restore-moving'))
    symlinkSync(outside, join(home, '.berth-restore-previous'))
    await h.call('POST', path(slug, `snapshots/${id}/restore/`), { key })
    await h.services.jobs.drain()
    expect(readdirSync(outside)).toEqual([])
    expect(readdirSync(home).sort()).toEqual(['logs', 'public'])
    rmSync(outside, { recursive: true })
  })

  it('keeps at most snapshots_per_site (409 past it); DELETE removes the row and the stored file', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_business_monthly')
    const ids: string[] = []
    for (let i = 0; i < 3; i++) ids.push((await h.call('POST', path(slug, 'snapshot/'), { key })).json.data.id)
    const full = await h.call('POST', path(slug, 'snapshot/'), { key })
    expect(full.status).toBe(409)
    expect(full.json.error.message).toContain('3 snapshots')
    await h.services.jobs.drain()
    const list = await h.call('GET', path(slug, 'snapshots/'), { key })
    expect(list.json.data.map((a: { id: string }) => a.id).sort()).toEqual([...ids].sort())
    expect(storedKeys(h, siteId)).toHaveLength(3)

    const gone = await h.call('DELETE', path(slug, `snapshots/${ids[0]}/`), { key })
    expect(gone.status, gone.text).toBe(200)
    expect(gone.json.data).toEqual({ id: ids[0], deleted: true })
    expect(storedKeys(h, siteId)).not.toContain(`${ids[0]}.tar.zst`)
    expect(storedKeys(h, siteId)).toHaveLength(2)
    expect((await h.call('GET', path(slug, 'snapshots/'), { key })).json.data).toHaveLength(2)
    expect((await h.call('GET', path(slug, `snapshots/${ids[0]}/`), { key })).status).toBe(404)
    expect((await h.call('DELETE', path(slug, `snapshots/${ids[0]}/`), { key })).status).toBe(404)
    expect((await h.call('POST', path(slug, 'snapshot/'), { key })).status).toBe(200)
    await h.services.jobs.drain()
  })

  it('403 on a shared plan, naming the plans that have snapshots; listing answers there', async () => {
    const { slug, key } = await buy(h, 'svc_starter_monthly')
    const res = await h.call('POST', path(slug, 'snapshot/'), { key })
    expect(res.status).toBe(403)
    expect(res.json.error.code).toBe('FORBIDDEN')
    expect(res.json.error.message).toMatch(/vps and dedicated plans \(.*business.*\)/)
    expect((await h.call('GET', path(slug, 'snapshots/'), { key })).json.data).toEqual([])
  })

  it('404 for another account, an unknown id or a backup id; 422 for a malformed id; 403 without write', async () => {
    const { slug, key } = await buy(h, 'svc_business_monthly')
    const id = (await h.call('POST', path(slug, 'snapshot/'), { key })).json.data.id
    await h.services.jobs.drain()
    const stranger = await h.register()
    for (const [method, rest] of [['POST', 'snapshot/'], ['GET', 'snapshots/'], ['GET', `snapshots/${id}/`], ['POST', `snapshots/${id}/restore/`], ['DELETE', `snapshots/${id}/`], ['GET', 'backups/']] as const) {
      const res = await h.call(method, path(slug, rest), { key: stranger.key })
      expect(res.status, `${method} ${rest}`).toBe(404)
      expect(res.json.error.param).toBe('tenant_slug')
    }
    const unknown = crypto.randomUUID()
    for (const [method, rest, param] of [['GET', `snapshots/${unknown}/`, 'snapshot_id'], ['POST', `snapshots/${unknown}/restore/`, 'snapshot_id'], ['DELETE', `snapshots/${unknown}/`, 'snapshot_id'], ['POST', `backups/${id}/restore/`, 'backup_id']] as const) {
      const res = await h.call(method, path(slug, rest), { key })
      expect(res.status, `${method} ${rest}`).toBe(404)
      expect(res.json.error.param).toBe(param)
    }
    for (const [method, rest, param] of [['GET', 'snapshots/nope/', 'snapshot_id'], ['POST', 'snapshots/123/restore/', 'snapshot_id'], ['DELETE', 'snapshots/x/', 'snapshot_id'], ['POST', 'backups/zz/restore/', 'backup_id']] as const) {
      const res = await h.call(method, path(slug, rest), { key })
      expect(res.status, `${method} ${rest}`).toBe(422)
      expect(res.json.error.param).toBe(param)
    }
    const readOnly = (await h.call('POST', '/api/v1/keys/create/', { key, body: { scopes: ['read'] } })).json.data.api_key
    expect((await h.call('POST', path(slug, 'snapshot/'), { key: readOnly })).status).toBe(403)
    expect((await h.call('GET', path(slug, 'snapshots/'), { key: readOnly })).status).toBe(200)
  })

  it('409 for a restore of a snapshot that is not ready, and for changes to a site pending deletion', async () => {
    const { slug, key, siteId } = await buy(h, 'svc_business_monthly')
    const id = (await h.call('POST', path(slug, 'snapshot/'), { key })).json.data.id
    const early = await h.call('POST', path(slug, `snapshots/${id}/restore/`), { key })
    expect(early.status).toBe(409)
    expect(early.json.error.message).toContain('creating')
    expect((await h.call('DELETE', path(slug, `snapshots/${id}/`), { key })).status).toBe(409)
    await h.services.jobs.drain()
    h.services.store.sqlite.run("UPDATE sites SET status = 'pending_deletion' WHERE id = ?", [siteId])
    expect((await h.call('POST', path(slug, 'snapshot/'), { key })).status).toBe(409)
    expect((await h.call('POST', path(slug, `snapshots/${id}/restore/`), { key })).status).toBe(409)
    expect((await h.call('GET', path(slug, 'snapshots/'), { key })).status).toBe(200)
  })

  it('a failed job leaves a failed snapshot with a message free of host paths', async () => {
    const { slug, key } = await buy(h, 'svc_business_monthly')
    // A home that is not there makes tar fail, with the host path in its message.
    const original = runtime.homePath.bind(runtime)
    runtime.homePath = async () => join(runtime.root, 'does-not-exist', slug)
    try {
      const id = (await h.call('POST', path(slug, 'snapshot/'), { key })).json.data.id
      // Three attempts, 1 s and 5 s apart by the manual clock.
      const deadline = Date.now() + 15_000
      let row
      do {
        await Bun.sleep(50)
        h.clock.advance(6000)
        h.services.jobs.kick()
        row = (await h.call('GET', path(slug, `snapshots/${id}/`), { key })).json.data
      } while (row.status === 'creating' && Date.now() < deadline)
      expect(row.status).toBe('failed')
      expect(row.error).toContain(id)
      expect(row.error).not.toContain(runtime.root)
      expect(row.completed_at).not.toBeNull()
    } finally {
      runtime.homePath = original
    }
  }, 20_000)
})

describe('daily backups', () => {
  const runtime = new HomeRuntime()
  const h = inProcess({ runtime, env: { BERTH_ARCHIVES_BACKUPS_KEPT: '7' } })
  afterAll(async () => {
    await h.close()
    runtime.close()
    rmSync(runtime.root, { recursive: true, force: true })
  })
  const backups = async (slug: string, key: string) => (await h.call('GET', `/api/v1/sites/${slug}/backups/`, { key })).json.data as { id: string; status: string; created_at: string; error: string | null }[]
  let site: { slug: string; key: string; siteId: string }

  it('the first backup comes at the first pass after the site is active, on every plan; the next when the newest is a day old', async () => {
    site = await buy(h, 'svc_starter_monthly')
    expect(h.services.archives.scheduleBackups()).toBe(1)
    await h.services.jobs.drain()
    const first = await backups(site.slug, site.key)
    expect(first).toHaveLength(1)
    expect(first[0].status).toBe('ready')
    expect(h.services.archives.scheduleBackups()).toBe(0)
    h.clock.advance(DAY - 1000)
    expect(h.services.archives.scheduleBackups()).toBe(0)
    h.clock.advance(1000)
    expect(h.services.archives.scheduleBackups()).toBe(1)
    // One at a time per site: a backup still being made is not doubled.
    expect(h.services.archives.scheduleBackups()).toBe(0)
    await h.services.jobs.drain()
    expect(await backups(site.slug, site.key)).toHaveLength(2)
  })

  it('keeps the newest 7 and deletes older ones, rows and files', async () => {
    for (let day = 0; day < 8; day++) {
      h.clock.advance(DAY)
      h.services.archives.scheduleBackups()
      await h.services.jobs.drain()
    }
    const list = await backups(site.slug, site.key)
    expect(list).toHaveLength(7)
    expect(list.every((b) => b.status === 'ready')).toBe(true)
    // Newest first, a day apart, the newest made now.
    expect(list[0].created_at).toBe(new Date(h.clock.now()).toISOString())
    expect(Date.parse(list[0].created_at) - Date.parse(list[6].created_at)).toBe(6 * DAY)
    expect(storedKeys(h, site.siteId).sort()).toEqual(list.map((b) => `${b.id}.tar.zst`).sort())
  })

  it('a backup restores like a snapshot, on a shared plan too', async () => {
    const home = await runtime.homePath(site.slug)
    writeFileSync(join(home, 'public', 'index.html'), 'broken')
    const [newest] = await backups(site.slug, site.key)
    const res = await h.call('POST', `/api/v1/sites/${site.slug}/backups/${newest.id}/restore/`, { key: site.key })
    expect(res.status, res.text).toBe(200)
    await h.services.jobs.drain()
    expect(readFileSync(join(home, 'public', 'index.html'), 'utf8')).toBe('<h1>hello</h1>')
    expect((await h.call('GET', `/api/v1/sites/${site.slug}/backups/${newest.id}/`, { key: site.key })).json.data.restored_at).not.toBeNull()
    // Not a snapshot: the snapshot routes do not know it, and backups are not deleted on request.
    expect((await h.call('DELETE', `/api/v1/sites/${site.slug}/snapshots/${newest.id}/`, { key: site.key })).status).toBe(404)
  })

  it('a restore its caller runs itself (runHere, as a move does) is left alone by the upkeep pass while it runs', async () => {
    const [newest] = await backups(site.slug, site.key)
    h.services.store.sqlite.run("UPDATE archives SET status = 'restoring' WHERE id = ?", [newest.id])
    const original = runtime.homePath.bind(runtime)
    const { promise: released, resolve: release } = Promise.withResolvers<void>()
    const { promise: reached, resolve: arrived } = Promise.withResolvers<void>()
    runtime.homePath = async (slug) => {
      arrived()
      await released
      return original(slug)
    }
    try {
      const restoring = h.services.jobs.runHere(RESTORE_ARCHIVE_JOB, newest.id)
      await reached
      // berth serve's pass meanwhile: without the running job it would settle the archive as
      // stranded (back to ready: the site's healer would start it on the files being replaced).
      await h.services.archives.maintain()
      expect((await h.call('GET', `/api/v1/sites/${site.slug}/backups/${newest.id}/`, { key: site.key })).json.data.status).toBe('restoring')
      release()
      await restoring
    } finally {
      runtime.homePath = original
    }
    const done = (await h.call('GET', `/api/v1/sites/${site.slug}/backups/${newest.id}/`, { key: site.key })).json.data
    expect([done.status, done.restored_at !== null]).toEqual(['ready', true])
    expect(h.services.store.sqlite.query('SELECT kind, status FROM jobs WHERE subject_id = ? ORDER BY rowid DESC LIMIT 1').get(newest.id)).toEqual({ kind: RESTORE_ARCHIVE_JOB, status: 'succeeded' })
  })

  it('after a failure, tries again an hour later, not at every pass', async () => {
    h.clock.advance(DAY)
    const original = runtime.homePath.bind(runtime)
    runtime.homePath = async () => { throw new Error('engine down') }
    try {
      expect(h.services.archives.scheduleBackups()).toBe(1)
      // Settle the job as its last attempt would, without the retry delays.
      const job = h.services.store.sqlite.query("SELECT subject_id FROM jobs WHERE kind = 'create_archive' ORDER BY created_at DESC, rowid DESC LIMIT 1").get() as { subject_id: string }
      h.services.store.sqlite.run("UPDATE jobs SET status = 'failed' WHERE subject_id = ?", [job.subject_id])
      await h.services.archives.maintain()
      expect((await backups(site.slug, site.key))[0]).toMatchObject({ id: job.subject_id, status: 'failed' })
      expect(h.services.archives.scheduleBackups()).toBe(0)
      h.clock.advance(HOUR)
    } finally {
      runtime.homePath = original
    }
    expect(h.services.archives.scheduleBackups()).toBe(1)
    await h.services.jobs.drain()
    expect((await backups(site.slug, site.key))[0].status).toBe('ready')
  })

  it('removeAllFor (the deletion reaper\'s hook) removes every row and file of the site', async () => {
    const vps = await buy(h, 'svc_business_monthly')
    await h.call('POST', `/api/v1/sites/${vps.slug}/snapshot/`, { key: vps.key })
    await h.services.jobs.drain()
    // A file the store holds that no row names goes too.
    writeFileSync(join(h.services.config.archives.dir, site.siteId, 'stray.tar.zst'), 'x')
    for (const s of [site, vps]) await h.services.archives.removeAllFor(s.siteId)
    for (const s of [site, vps]) {
      expect(h.services.store.sqlite.query('SELECT count(*) AS n FROM archives WHERE site_id = ?').get(s.siteId)).toEqual({ n: 0 })
      expect(storedKeys(h, s.siteId)).toEqual([])
    }
    await h.services.archives.removeAllFor(site.siteId)
  })
})
