import { spawnSync } from 'bun'
import { Database } from 'bun:sqlite'
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { checkManifest, type OffsiteManifest } from '../src/domain/offsite/manifest'
import { FolderDestination } from '../src/drivers/offsite/folder'
import { EMPTY_SHA256, signRequest } from '../src/drivers/offsite/s3-sign'
import { ageKeyPair } from './helpers/age-keys'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'
import { startS3Server, S3RVER_KEY, type S3Server } from './helpers/s3-server'
import { instanceOf, removeInstanceSites, siteShell } from './helpers/sites'

/**
 * Copies off the box to an S3 bucket, and what happens when the destination fails (issue 25,
 * "Failures"), on the compiled binary, real Docker and s3rver (test/helpers/s3-server.ts, in a
 * process of its own that is killed with -9 and started again on the same port and folder).
 *
 * One Berth and one site go through every scenario in turn; between them Berth is restarted on
 * the same data folder with other offsite settings (the `env` object is read at each start):
 *   1. the happy path: a backup copied, listed in the bucket, fetched by a presigned URL and
 *      opened with Debian's `age -d -i`, zstd and tar;
 *   2. wrong credentials, then a bucket that does not exist: Berth starts and serves, a backup and
 *      a snapshot are ready as fast as before, the status says why; the bucket is created and
 *      `berth offsite push` (no restart) completes every copy that waited;
 *      Changing the bucket is a new destination: what was copied to the first one is copied
 *      again to the new one, and its manifest names only what it holds;
 *   3. a full destination: s3rver has no quota nor any way to answer "full", so this one is a
 *      file:// folder on a 2 MiB tmpfs; the copy fails as full, leaves nothing, blocks nothing,
 *      and completes once the tmpfs is remounted larger;
 *   4. s3rver killed in the middle of the multipart upload of an 80 MB snapshot: nothing listed,
 *      Berth serves; s3rver started again, `berth offsite push` completes the copy;
 *   5. Berth killed with -9 in the middle of such an upload: after the restart the copy is made
 *      again (by the first pass, no push) and completes.
 * What is "listed" is what an S3 client lists in the bucket (ListObjectsV2), never s3rver's folder;
 * the folder is read only to see that a multipart upload is under way (its parts on disk).
 */
const scratch = mkdtempSync(join(tmpdir(), 'berth-offsite-s3-e2e-'))
const fullDir = join(scratch, 'full')
const PREFIX = 'box'
const LATE_BUCKET = 'berth-late'
let s3: S3Server
let keys: { identityFile: string; recipient: string }
let env: Record<string, string>
let berth: Berth
let mounted = false

/** How long things take with a working destination (scenario 1), the yardstick of "nothing blocks". */
const normal = { startMs: 0, snapshotMs: 0, backupMs: 0 }
/** What "nothing blocks" allows beyond the normal time. */
const SLACK_MS = 5_000

interface Site { slug: string; key: string; id: string }
let site: Site
/** Scenario 1's backup, copied to the first bucket. */
let firstBackup = ''
/** Every backup id seen so far, so a scenario waits for a new one. */
const seenBackups = new Set<string>()

beforeAll(async () => {
  s3 = await startS3Server()
  keys = ageKeyPair(scratch)
  const sshBase = 20_000 + Math.floor(Math.random() * 400) * 100
  env = {
    BERTH_OFFSITE_URL: `s3://${s3.bucket}/${PREFIX}`,
    BERTH_OFFSITE_ENDPOINT: s3.endpoint,
    BERTH_OFFSITE_REGION: 'us-east-1',
    BERTH_OFFSITE_ACCESS_KEY_ID: S3RVER_KEY.accessKeyId,
    BERTH_OFFSITE_SECRET_ACCESS_KEY: S3RVER_KEY.secretAccessKey,
    BERTH_OFFSITE_PATH_STYLE: 'true',
    BERTH_OFFSITE_AGE_RECIPIENTS: keys.recipient,
    BERTH_OFFSITE_STORE_INTERVAL_SECONDS: '10',
    // Every maintenance pass (every 8 s here) makes a backup, so each scenario gets one of its own soon.
    BERTH_SERVER_MAINTENANCE_SECONDS: '8',
    BERTH_ARCHIVES_BACKUP_INTERVAL_SECONDS: '6',
    BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}`,
    BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour',
  }
  const started = Date.now()
  berth = await startBerth({ env })
  normal.startMs = Date.now() - started
  instanceOf(berth)
}, 60_000)

afterAll(async () => {
  await berth?.stop()
  await removeInstanceSites(berth)
  await berth?.dispose()
  if (mounted) spawnSync(['umount', fullDir])
  await s3?.remove()
  rmSync(scratch, { recursive: true, force: true })
}, 90_000)

// ---- the bucket, as the hoster's own S3 client sees it ----

/** A plain S3 client on the test server's `bucket` (the hoster's tools, not Berth's driver). */
const client = (bucket: string = s3.bucket) => new Bun.S3Client({ endpoint: s3.endpoint, bucket, region: 'us-east-1', ...S3RVER_KEY })

/** Every key listed under `{PREFIX}/{prefix}` in `bucket` (ListObjectsV2), relative to PREFIX. */
async function listed(prefix: string, bucket?: string): Promise<string[]> {
  const page = await client(bucket).list({ prefix: `${PREFIX}/${prefix}` })
  return (page.contents ?? []).map((o) => o.key.slice(PREFIX.length + 1)).sort()
}

/** An object fetched by hand through a presigned URL, as a hoster would with curl. */
async function fetchObject(key: string, bucket?: string): Promise<Uint8Array> {
  const res = await fetch(client(bucket).presign(`${PREFIX}/${key}`, { expiresIn: 300 }))
  expect(res.status, key).toBe(200)
  return new Uint8Array(await res.arrayBuffer())
}

/** CreateBucket, signed as any S3 client signs it. */
async function createBucket(name: string): Promise<void> {
  const url = new URL(`${s3.endpoint}/${name}`)
  const headers = signRequest({ method: 'PUT', url, payloadSha256: EMPTY_SHA256, credentials: { ...S3RVER_KEY, region: 'us-east-1' } })
  const res = await fetch(url, { method: 'PUT', headers })
  expect(res.status, await res.text()).toBe(200)
}

// ---- what the hoster does by hand ----

/** Opens sealed bytes with Debian's `age -d -i` and the identity from `age-keygen`. */
function ageOpen(sealed: Uint8Array): Buffer {
  const file = join(scratch, `object-${crypto.randomUUID().slice(0, 8)}.age`)
  writeFileSync(file, sealed)
  const p = spawnSync(['age', '-d', '-i', keys.identityFile, file], { stdout: 'pipe', stderr: 'pipe' })
  rmSync(file)
  expect(p.exitCode, p.stderr.toString()).toBe(0)
  return p.stdout
}

/** A file's content out of an archive's plaintext (a .tar.zst), with zstd and tar. */
function untar(tarZst: Uint8Array, path: string): string {
  const tar = spawnSync(['zstd', '-d', '-c'], { stdin: tarZst, stdout: 'pipe' })
  expect(tar.exitCode).toBe(0)
  const out = spawnSync(['tar', '-xOf', '-', path], { stdin: tar.stdout, stdout: 'pipe', stderr: 'pipe' })
  expect(out.exitCode, out.stderr.toString()).toBe(0)
  return out.stdout.toString()
}

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher('sha256').update(bytes).digest('hex')

/** The newest manifest in the bucket, fetched and opened with age. */
async function latestManifest(bucket?: string): Promise<OffsiteManifest> {
  const names = await listed('manifests/', bucket)
  expect(names.length).toBeGreaterThan(0)
  return checkManifest(JSON.parse(ageOpen(await fetchObject(names.at(-1)!, bucket)).toString()))
}

/** `berth offsite <sub> --json` on the server's data folder and config, as the hoster runs it. */
function offsite(sub: 'status' | 'push') {
  const p = spawnSync([BINARY, 'offsite', sub, '--json', '--data-dir', berth.dataDir], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, json: JSON.parse(p.stdout.toString() || 'null'), err: p.stderr.toString() }
}

/** Polls `read` until `done` holds (or throws with the last value). */
async function until<T>(read: () => Promise<T> | T, done: (v: T) => boolean, timeoutMs: number, pollMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await read()
    if (done(v)) return v
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(v)?.slice(0, 2000)}`)
    await Bun.sleep(pollMs)
  }
}

// ---- the site ----

/** The archive copy's key of one of the site's archives. */
const archiveKey = (id: string) => `archives/${site.id}/${id}.tar.zst.age`

/** Takes a snapshot; resolves once it is ready, with how long that took. */
async function snapshot(): Promise<{ id: string; ms: number }> {
  const started = Date.now()
  const taken = await api(berth.url, 'POST', `/sites/${site.slug}/snapshot/`, { key: site.key })
  expect(taken.status, taken.text).toBe(200)
  const id = taken.json.data.id as string
  await until(async () => (await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data.status, (s) => s !== 'creating', 60_000, 50)
  const view = (await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data
  expect(view.status, JSON.stringify(view)).toBe('ready')
  return { id, ms: Date.now() - started }
}

/**
 * Waits for a backup not seen before to be ready (each maintenance pass makes one); returns its
 * view and how long it took in this process (from its creation, or from `since` when it was
 * queued before: maintenance runs once more as Berth stops).
 */
async function newBackup(since: number, timeoutMs = 50_000): Promise<{ view: any; ms: number }> {
  const view = await until(async () => (await api(berth.url, 'GET', `/sites/${site.slug}/backups/`, { key: site.key })).json.data.find((b: any) => !seenBackups.has(b.id) && b.status !== 'creating'), (b) => b !== undefined, timeoutMs, 250)
  seenBackups.add(view.id)
  expect(view.status, JSON.stringify(view)).toBe('ready')
  return { view, ms: Date.parse(view.completed_at) - Math.max(Date.parse(view.created_at), since) }
}

/** Restarts Berth on the same data folder with `changes` to its environment; how long the start took. */
async function restartWith(changes: Record<string, string>): Promise<{ at: number; ms: number }> {
  await berth.stop()
  Object.assign(env, changes)
  const at = Date.now()
  await berth.restart()
  return { at, ms: Date.now() - at }
}

/** Requests a customer and a visitor make still answer. */
async function stillServes(): Promise<void> {
  const status = await api(berth.url, 'GET', '/status/')
  expect(status.status, status.text).toBe(200)
  expect(status.json.data.offsite.enabled).toBe(true)
  expect((await api(berth.url, 'GET', `/sites/${site.slug}/`, { key: site.key })).json.data.status).toBe('active')
  const page = await viaEdge(berth.url, site.slug, '/offsite.txt')
  expect(page.status).toBe(200)
  expect(page.text).toBe('kept off the box')
}

describe('copies off the box to S3 (s3rver), and the destination failing', () => {
  it('1. a backup is copied to the bucket: listed local and offsite, fetched by a presigned URL, opened with age -d -i and untarred', async () => {
    const slug = uniqueSlug('s3')
    const { data } = await buyDirect(berth.url, { sku: 'svc_business_monthly', slug })
    expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
    site = { slug, key: data.api_key, id: '' }
    const written = await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key: site.key, body: { path: 'public/offsite.txt', content: 'kept off the box' } })
    expect(written.status, written.text).toBe(200)
    site.id = siteIdOf(slug)
    normal.snapshotMs = (await snapshot()).ms

    const { view, ms } = await newBackup(0, 60_000)
    normal.backupMs = ms
    firstBackup = view.id
    const copied = await until(async () => (await api(berth.url, 'GET', `/sites/${slug}/backups/${view.id}/`, { key: site.key })).json.data, (b) => b.copies.includes('offsite'), 30_000, 250)
    expect(copied.copies).toEqual(['local', 'offsite'])
    const status = offsite('status')
    expect(status.code, status.err).toBe(0)
    expect(status.json).toMatchObject({ enabled: true, destination: `s3://${s3.bucket}/${PREFIX}`, last_error: null, archives: { pending: 0 } })

    // The bucket, as the hoster's S3 client lists it: the archive, the store copy, a manifest.
    const all = await listed('')
    expect(all).toContain(archiveKey(view.id))
    expect(all).toContain(status.json.last_store_copy.key)
    expect(all).toContain(status.json.last_manifest.key)
    const plain = ageOpen(await fetchObject(archiveKey(view.id)))
    expect(untar(plain, './public/offsite.txt')).toBe('kept off the box')
    expect(sha256(plain)).toBe(sha256(readFileSync(join(berth.dataDir, 'archives', site.id, `${view.id}.tar.zst`))))
  }, 150_000)

  it('2a. wrong credentials: Berth starts and serves, a backup and a snapshot are ready as fast as before, the status names the credentials', async () => {
    for (const b of (await api(berth.url, 'GET', `/sites/${site.slug}/backups/`, { key: site.key })).json.data) seenBackups.add(b.id)
    const start = await restartWith({ BERTH_OFFSITE_ACCESS_KEY_ID: 'AKIANOTKNOWNHERE', BERTH_OFFSITE_SECRET_ACCESS_KEY: 'not-the-secret' })
    expect(start.ms).toBeLessThan(normal.startMs + SLACK_MS)
    await stillServes()
    const snap = await snapshot()
    expect(snap.ms).toBeLessThan(normal.snapshotMs + SLACK_MS)
    const status = await until(() => offsite('status').json, (s) => s.last_error !== null && s.archives.pending >= 1, 20_000)
    expect(status.last_error.message).toContain('refused the credentials (InvalidAccessKeyId)')
    expect(status.last_error.message).toContain('check offsite.access_key_id and offsite.secret_access_key')
    expect(status.last_error.message).not.toContain('not-the-secret')
    const backup = await newBackup(start.at)
    expect(backup.ms).toBeLessThan(normal.backupMs + SLACK_MS)
    await stillServes()
    // Neither is copied (the bucket holds neither), and both wait.
    expect((await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/${snap.id}/`, { key: site.key })).json.data.copies).toEqual(['local'])
    const keysNow = await listed('archives/')
    expect(keysNow).not.toContain(archiveKey(snap.id))
    expect(keysNow).not.toContain(archiveKey(backup.view.id))
    expect(offsite('status').json.archives.pending).toBeGreaterThanOrEqual(2)
  }, 90_000)

  it('2b. a bucket that does not exist: Berth starts and serves, nothing blocks, the status says to create it; once created, berth offsite push completes every copy without a restart', async () => {
    const start = await restartWith({ BERTH_OFFSITE_URL: `s3://${LATE_BUCKET}/${PREFIX}`, BERTH_OFFSITE_ACCESS_KEY_ID: S3RVER_KEY.accessKeyId, BERTH_OFFSITE_SECRET_ACCESS_KEY: S3RVER_KEY.secretAccessKey })
    expect(start.ms).toBeLessThan(normal.startMs + SLACK_MS)
    await stillServes()
    const snap = await snapshot()
    expect(snap.ms).toBeLessThan(normal.snapshotMs + SLACK_MS)
    const status = await until(() => offsite('status').json, (s) => s.last_error?.message.includes('NoSuchBucket'), 20_000)
    expect(status.last_error.message).toContain(`s3://${LATE_BUCKET}/${PREFIX}`)
    expect(status.last_error.message).toContain('the bucket does not exist (NoSuchBucket); create it, or fix the bucket name in offsite.url')
    // A new destination: what the first bucket holds is not there, and the list says so.
    expect((await api(berth.url, 'GET', `/sites/${site.slug}/backups/${firstBackup}/`, { key: site.key })).json.data.copies).toEqual(['local'])
    const backup = await newBackup(start.at)
    expect(backup.ms).toBeLessThan(normal.backupMs + SLACK_MS)
    await stillServes()
    expect((await api(berth.url, 'GET', `/sites/${site.slug}/backups/${backup.view.id}/`, { key: site.key })).json.data.copies).toEqual(['local'])

    // The hoster creates the bucket and pushes (rather than wait for the back-off, 30 s doubling).
    await createBucket(LATE_BUCKET)
    const pushed = offsite('push')
    expect(pushed.code, pushed.err).toBe(0)
    expect(pushed.json.failures).toEqual([])
    expect(offsite('status').json).toMatchObject({ last_error: null, archives: { pending: 0 } })
    const inBucket = await listed('archives/', LATE_BUCKET)
    expect(inBucket).toContain(archiveKey(snap.id))
    expect(inBucket).toContain(archiveKey(backup.view.id))
    expect(await listed(pushed.json.manifest, LATE_BUCKET)).toEqual([pushed.json.manifest])
    // Every archive of the site is in the new bucket: those that waited under the wrong
    // credentials, and those copied to the first bucket before (a new destination gets them all);
    // the manifest names each, and nothing the bucket does not hold.
    const archives = [
      ...(await api(berth.url, 'GET', `/sites/${site.slug}/backups/`, { key: site.key })).json.data,
      ...(await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/`, { key: site.key })).json.data,
    ].filter((a: any) => a.status === 'ready')
    expect(archives.length).toBeGreaterThanOrEqual(5)
    for (const a of archives) {
      expect(a.copies, a.id).toEqual(['local', 'offsite'])
      expect(inBucket).toContain(archiveKey(a.id))
    }
    const manifest = await latestManifest(LATE_BUCKET)
    expect(manifest.sites.find((m) => m.id === site.id)!.archives.map((a) => a.id).sort()).toEqual(archives.map((a: any) => a.id).sort())
    expect(await listed(manifest.store.key, LATE_BUCKET)).toEqual([manifest.store.key])
  }, 120_000)

  it('3. a full destination (file:// on a 2 MiB tmpfs): the copy fails as full and leaves nothing, backups and snapshots are ready; remounted larger, push completes it', async () => {
    const swapped = await siteShell(berth, site.slug, 'rm -f big.bin && head -c 4M /dev/urandom > mid.bin')
    expect(swapped.code, swapped.output).toBe(0)
    mkdirSync(fullDir)
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m,mode=0700', 'tmpfs', fullDir])
    mounted = true
    const folder = new FolderDestination(fullDir)
    const start = await restartWith({ BERTH_OFFSITE_URL: `file://${fullDir}` })
    expect(start.ms).toBeLessThan(normal.startMs + SLACK_MS)
    const snap = await snapshot()
    expect(snap.ms).toBeLessThan(normal.snapshotMs + SLACK_MS)
    const status = await until(() => offsite('status').json, (s) => s.last_error?.key === archiveKey(snap.id), 30_000)
    expect(status.last_error.message).toBe(`file://${fullDir} is full; free space or grow it`)
    await stillServes()
    // Nothing of it: not listed, and no partial file left taking the space.
    expect((await folder.list('archives/')).map((o) => o.key)).not.toContain(archiveKey(snap.id))
    const siteFolder = join(fullDir, 'archives', site.id)
    expect(readdirOr(siteFolder).filter((n) => n.startsWith(snap.id))).toEqual([])
    const backup = await newBackup(start.at)
    expect(backup.ms).toBeLessThan(normal.backupMs + SLACK_MS)

    execFileSync('mount', ['-o', 'remount,size=64m', fullDir])
    const pushed = offsite('push')
    expect(pushed.code, pushed.err).toBe(0)
    expect(pushed.json.failures).toEqual([])
    const keysNow = (await folder.list('archives/')).map((o) => o.key)
    expect(keysNow).toContain(archiveKey(snap.id))
    expect(keysNow).toContain(archiveKey(backup.view.id))
    const plain = ageOpen(readFileSync(join(fullDir, archiveKey(snap.id))))
    expect(sha256(plain)).toBe(sha256(readFileSync(join(berth.dataDir, 'archives', site.id, `${snap.id}.tar.zst`))))
    expect(offsite('status').json).toMatchObject({ last_error: null, archives: { pending: 0 } })
  }, 120_000)

  it('4. s3rver killed in the middle of a multipart upload: nothing listed, Berth serves; started again, the copy completes and opens with the digest the manifest records', async () => {
    // Back to the first bucket: every archive is copied there again (a new destination) first.
    // No more automatic backups from here: the copies under way are the snapshots' alone.
    await restartWith({ BERTH_OFFSITE_URL: `s3://${s3.bucket}/${PREFIX}`, BERTH_ARCHIVES_BACKUP_INTERVAL_SECONDS: '86400' })
    execFileSync('umount', [fullDir])
    mounted = false
    await until(() => offsite('status').json, (st) => st.archives.pending === 0 && st.last_error === null, 60_000, 500)
    const big = await siteShell(berth, site.slug, 'head -c 80M /dev/urandom > big.bin')
    expect(big.code, big.output).toBe(0)
    const partsBefore = s3.pendingParts()
    const taken = await api(berth.url, 'POST', `/sites/${site.slug}/snapshot/`, { key: site.key })
    expect(taken.status, taken.text).toBe(200)
    const id = taken.json.data.id as string
    await until(() => s3.pendingParts(), (n) => n > partsBefore, 60_000, 5)
    await s3.kill()

    const snap = await until(async () => (await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data, (s) => s.status === 'ready', 30_000, 100)
    expect(snap.copies).toEqual(['local'])
    const status = await until(() => offsite('status').json, (s) => s.last_error?.key === archiveKey(id), 30_000)
    expect(status.last_error.message).toContain(`s3://${s3.bucket}/${PREFIX}`)
    expect(status.archives.pending).toBeGreaterThanOrEqual(1)
    await stillServes()

    await s3.start()
    expect(await listed(`archives/${site.id}/`)).not.toContain(archiveKey(id))
    const pushed = offsite('push')
    expect(pushed.code, pushed.err).toBe(0)
    expect(pushed.json.failures).toEqual([])
    expect(await listed(`archives/${site.id}/`)).toContain(archiveKey(id))
    const plain = ageOpen(await fetchObject(archiveKey(id)))
    expect(sha256(plain)).toBe(sha256(readFileSync(join(berth.dataDir, 'archives', site.id, `${id}.tar.zst`))))
    const entry = (await latestManifest()).sites.find((s) => s.id === site.id)!.archives.find((a) => a.id === id)
    expect(entry).toMatchObject({ sha256: sha256(plain), bytes: plain.byteLength })
    expect(offsite('status').json).toMatchObject({ last_error: null, archives: { pending: 0 } })
    expect((await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data.copies).toEqual(['local', 'offsite'])
  }, 120_000)

  it('5. Berth killed with -9 in the middle of an upload: nothing listed; after the restart the copy is made again and completes', async () => {
    const partsBefore = s3.pendingParts()
    const taken = await api(berth.url, 'POST', `/sites/${site.slug}/snapshot/`, { key: site.key })
    expect(taken.status, taken.text).toBe(200)
    const id = taken.json.data.id as string
    await until(() => s3.pendingParts(), (n) => n > partsBefore, 60_000, 5)
    await berth.kill9()
    expect(await listed(`archives/${site.id}/`)).not.toContain(archiveKey(id))
    expect(offsite('status').json.archives.pending).toBeGreaterThanOrEqual(1)

    await berth.restart()
    // No push: the first pass after the start takes what the killed process left.
    const snap = await until(async () => (await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data, (s) => s.copies.includes('offsite'), 60_000, 250)
    expect(snap).toMatchObject({ status: 'ready', copies: ['local', 'offsite'] })
    expect(await listed(`archives/${site.id}/`)).toContain(archiveKey(id))
    const plain = ageOpen(await fetchObject(archiveKey(id)))
    expect(sha256(plain)).toBe(sha256(readFileSync(join(berth.dataDir, 'archives', site.id, `${id}.tar.zst`))))
    expect(offsite('status').json).toMatchObject({ last_error: null, archives: { pending: 0 } })
  }, 120_000)
})

/** The site's id (the API shows slugs only), read from Berth's store. */
function siteIdOf(slug: string): string {
  const db = new Database(join(berth.dataDir, 'berth.db'), { readonly: true })
  try {
    return (db.query('SELECT id FROM sites WHERE slug = ?').get(slug) as { id: string }).id
  } finally {
    db.close()
  }
}

function readdirOr(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}
