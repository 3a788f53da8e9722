import { spawnSync } from 'bun'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, BINARY, startBerth, type Berth } from './helpers/binary'
import { buyDirect, uniqueSlug, waitForSite } from './helpers/purchase'
import { docker, removeSitesOf, unpaused } from './helpers/sites'

/**
 * Copies off the box end to end (issue 25): the compiled binary with offsite.url a file:// folder,
 * a real Docker engine, and the copies opened by hand as a hoster would, with Debian's `age`,
 * `zstd` and `tar` and an identity made by `age-keygen`.
 */
const scratch = mkdtempSync(join(tmpdir(), 'berth-offsite-e2e-'))
const dest = join(scratch, 'dest')
const identityFile = join(scratch, 'id.txt')
let env: Record<string, string>
let berth: Berth
let instance: string | undefined

beforeAll(async () => {
  mkdirSync(dest)
  expect(spawnSync(['age-keygen', '-o', identityFile]).exitCode).toBe(0)
  const recipient = spawnSync(['age-keygen', '-y', identityFile]).stdout.toString().trim()
  const sshBase = 20_000 + Math.floor(Math.random() * 400) * 100
  env = {
    BERTH_OFFSITE_URL: `file://${dest}`,
    BERTH_OFFSITE_AGE_RECIPIENTS: recipient,
    BERTH_OFFSITE_STORE_INTERVAL_SECONDS: '10',
    BERTH_SERVER_MAINTENANCE_SECONDS: '5',
    BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}`,
    BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour',
  }
  berth = await startBerth({ env })
}, 60_000)

afterAll(async () => {
  await berth?.dispose()
  if (instance) await removeSitesOf(instance)
  rmSync(scratch, { recursive: true, force: true })
}, 60_000)

/** `berth offsite <sub> --json` on the same data folder and config as the server. */
function offsite(sub: 'status' | 'push') {
  const p = spawnSync([BINARY, 'offsite', sub, '--json', '--data-dir', berth.dataDir], { env: { PATH: process.env.PATH ?? '', ...env }, stdout: 'pipe', stderr: 'pipe' })
  return { code: p.exitCode, json: JSON.parse(p.stdout.toString() || 'null'), err: p.stderr.toString() }
}

/** Opens an object at the destination with `age -d -i` (as the hoster would): its plaintext. */
function ageOpen(key: string): Buffer {
  const p = spawnSync(['age', '-d', '-i', identityFile, join(dest, key)], { stdout: 'pipe', stderr: 'pipe' })
  expect(p.exitCode, p.stderr.toString()).toBe(0)
  return p.stdout
}

/** Polls `read` until `done` holds (or throws with the last value). */
async function until<T>(read: () => Promise<T> | T, done: (v: T) => boolean, timeoutMs: number, pollMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await read()
    if (done(v)) return v
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(v)}`)
    await Bun.sleep(pollMs)
  }
}

/** Runs a shell script in the site's container as the site user, in its home. */
async function siteShell(slug: string, script: string): Promise<number> {
  const [found] = await docker.listContainers({ filters: { label: ['dev.berth.managed=true', `dev.berth.site-slug=${slug}`] } })
  instance ??= found!.Labels['dev.berth.instance']
  const exec = await unpaused(() => docker.getContainer(found!.Id).exec({ Cmd: ['sh', '-c', script], User: '1000:1000', WorkingDir: '/home/site', AttachStdout: true, AttachStderr: true }))
  const stream = await exec.start({})
  stream.resume()
  await new Promise((done) => stream.on('end', done))
  return (await exec.inspect()).ExitCode ?? -1
}

let site: { slug: string; key: string; id: string }

describe('copies off the box', () => {
  it('copies the store at start: GET /status/ and berth offsite status say so', async () => {
    const status = await until(async () => (await api(berth.url, 'GET', '/status/')).json.data.offsite, (o) => o.last_store_copy_age_seconds !== null, 15_000)
    expect(status.enabled).toBe(true)
    expect(status.last_store_copy_age_seconds).toBeLessThan(15)
    const cli = offsite('status')
    expect(cli.code, cli.err).toBe(0)
    expect(cli.json).toMatchObject({ enabled: true, destination: `file://${dest}`, stale: false, last_error: null, archives: { pending: 0 } })
    expect(existsSync(join(dest, cli.json.last_store_copy.key))).toBe(true)
    // The manifest opens with Debian's age and names that store copy.
    const manifest = JSON.parse(ageOpen(cli.json.last_manifest.key).toString())
    expect(manifest).toMatchObject({ format: 2, key: cli.json.last_manifest.key, store: { key: cli.json.last_store_copy.key }, signature: { alg: 'ed25519', public_key: cli.json.signing_key } })
  }, 30_000)

  it('a backup is copied off the box, listed as kept local and offsite, and opens by hand with age, zstd and tar', async () => {
    const slug = uniqueSlug('off')
    const { data } = await buyDirect(berth.url, { sku: 'svc_business_monthly', slug })
    expect(await waitForSite(berth.url, data.api_key, slug)).toBe('active')
    const written = await api(berth.url, 'POST', `/sites/${slug}/files/write/`, { key: data.api_key, body: { path: 'public/offsite.txt', content: 'kept off the box' } })
    expect(written.status, written.text).toBe(200)
    site = { slug, key: data.api_key, id: '' }
    // The first backup comes at the first maintenance pass after the site is active (every 5 s here).
    const backups = await until(async () => (await api(berth.url, 'GET', `/sites/${slug}/backups/`, { key: site.key })).json.data, (list) => list[0]?.copies?.includes('offsite'), 90_000, 500)
    expect(backups[0]).toMatchObject({ status: 'ready', copies: ['local', 'offsite'] })
    // Archive copies are kept as archives/{site id}/{archive id}.tar.zst.age.
    site.id = readdirSync(join(dest, 'archives')).find((d) => existsSync(join(dest, 'archives', d, `${backups[0].id}.tar.zst.age`)))!
    const key = `archives/${site.id}/${backups[0].id}.tar.zst.age`
    const zst = join(scratch, 'backup.tar.zst')
    await Bun.write(zst, ageOpen(key))
    const tar = spawnSync(['zstd', '-d', '-c', zst], { stdout: 'pipe' })
    expect(tar.exitCode).toBe(0)
    const listing = spawnSync(['tar', '-tf', '-'], { stdin: tar.stdout, stdout: 'pipe' }).stdout.toString()
    expect(listing).toContain('./public/offsite.txt')
    expect(spawnSync(['tar', '-xOf', '-', './public/offsite.txt'], { stdin: tar.stdout, stdout: 'pipe' }).stdout.toString()).toBe('kept off the box')
    const cli = offsite('status')
    expect(cli.json).toMatchObject({ archives: { pending: 0, deleting: 0 }, last_error: null })
  }, 150_000)

  it('kill -9 in the middle of a copy: the copy stays pending, nothing half-written is listed, and it completes after the restart', async () => {
    expect(await siteShell(site.slug, 'head -c 160M /dev/urandom > big.bin')).toBe(0)
    const taken = await api(berth.url, 'POST', `/sites/${site.slug}/snapshot/`, { key: site.key })
    expect(taken.status, taken.text).toBe(200)
    const id = taken.json.data.id
    const folder = join(dest, 'archives', site.id)
    const partial = () => (existsSync(folder) ? readdirSync(folder) : []).find((n) => n.startsWith(`${id}.tar.zst.age.partial`))
    await until(partial, (p) => p !== undefined, 60_000, 5)
    await berth.kill9()
    expect(existsSync(join(folder, `${id}.tar.zst.age`))).toBe(false)
    const killed = offsite('status')
    expect(killed.json.archives.pending).toBeGreaterThanOrEqual(1)

    await berth.restart()
    const snapshot = await until(async () => (await api(berth.url, 'GET', `/sites/${site.slug}/snapshots/${id}/`, { key: site.key })).json.data, (s) => s.copies.includes('offsite'), 60_000, 250)
    expect(snapshot).toMatchObject({ status: 'ready', copies: ['local', 'offsite'] })
    const local = readFileSync(join(berth.dataDir, 'archives', site.id, `${id}.tar.zst`))
    const copied = ageOpen(`archives/${site.id}/${id}.tar.zst.age`)
    expect(copied.byteLength).toBe(local.byteLength)
    expect(new Bun.CryptoHasher('sha256').update(copied).digest('hex')).toBe(new Bun.CryptoHasher('sha256').update(local).digest('hex'))
    expect(offsite('status').json).toMatchObject({ archives: { pending: 0 }, last_error: null })
  }, 180_000)

  it('berth offsite push copies now, and the store is copied once more at shutdown', async () => {
    const before = readdirSync(join(dest, 'manifests')).length
    const pushed = offsite('push')
    expect(pushed.code, pushed.err).toBe(0)
    expect(pushed.json).toMatchObject({ failures: [] })
    expect(existsSync(join(dest, pushed.json.manifest))).toBe(true)
    await berth.stop()
    expect(berth.output()).toContain('"msg":"copied the store off the box"')
    // Nothing failed on the way, before the kill or after the restart.
    expect(berth.output()).not.toContain('"level":"error"')
    expect(berth.output()).not.toContain('could not be copied off the box')
    expect(readdirSync(join(dest, 'manifests')).length).toBeGreaterThanOrEqual(before + 2)
  }, 60_000)
})
