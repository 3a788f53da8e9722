import Docker from 'dockerode'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { zstdDecompressSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { api, startBerth, type Berth } from './helpers/binary'
import { removeEngineInstance } from './helpers/engine-instance'
import { unpaused } from './helpers/sites'
import { buyDirect, uniqueSlug, viaEdge, waitForSite } from './helpers/purchase'

/**
 * Snapshots and backups end to end: the compiled binary, a real Docker engine, sites on the
 * images `berth images build` makes, files written by the site user inside its container.
 */
const docker = new Docker({ socketPath: '/var/run/docker.sock' })
const scratch = mkdtempSync(join(tmpdir(), 'berth-archives-e2e-'))

let berth: Berth
beforeAll(async () => {
  // SSH ports of vps sites from a range of their own: other suites' Berths share the engine.
  const sshBase = 20_000 + Math.floor(Math.random() * 400) * 100
  berth = await startBerth({ env: { BERTH_RATE_LIMITS_CHECKOUT_CREATE: '100/hour', BERTH_RATE_LIMITS_REGISTER: '100/hour', BERTH_CONTAINERS_RECONCILE_SECONDS: '2', BERTH_SERVER_MAINTENANCE_SECONDS: '5', BERTH_SSH_PORT_RANGE: `${sshBase}-${sshBase + 99}` } })
}, 60_000)
afterAll(async () => {
  await berth?.dispose()
  if (instance) await removeEngineInstance(docker, instance)
  rmSync(scratch, { recursive: true, force: true })
}, 60_000)

/** This Berth's instance id, read from the labels of its first site's container. */
let instance: string | undefined

async function containerOf(slug: string): Promise<Docker.ContainerInfo | undefined> {
  const [found] = await docker.listContainers({ filters: { label: ['dev.berth.managed=true', `dev.berth.site-slug=${slug}`] } })
  instance ??= found?.Labels['dev.berth.instance']
  return found
}

/** Runs a shell script in the site's container as the site user, in its home. */
async function siteShell(slug: string, script: string, opts: { detach?: boolean } = {}): Promise<{ code: number; output: string }> {
  const found = await containerOf(slug)
  if (!found) throw new Error(`no running container for ${slug}`)
  const exec = await unpaused(() => docker.getContainer(found.Id).exec({ Cmd: ['sh', '-c', script], User: '1000:1000', WorkingDir: '/home/site', AttachStdout: !opts.detach, AttachStderr: !opts.detach, Tty: true }))
  if (opts.detach) {
    await exec.start({ Detach: true, Tty: true })
    return { code: 0, output: '' }
  }
  const stream = await exec.start({ Tty: true })
  let output = ''
  stream.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')))
  await new Promise((done) => stream.on('end', done))
  return { code: (await exec.inspect()).ExitCode ?? -1, output: output.replace(/\r\n/g, '\n') }
}

async function buyActive(sku: string, key?: string): Promise<{ slug: string; key: string }> {
  const slug = uniqueSlug('arc')
  const { data } = await buyDirect(berth.url, { sku, slug, key })
  const apiKey = key ?? data.api_key
  expect(await waitForSite(berth.url, apiKey, slug)).toBe('active')
  await containerOf(slug)
  return { slug, key: apiKey }
}

/** Polls one archive until `done` holds; returns it. */
async function waitArchive(slug: string, key: string, kind: 'snapshots' | 'backups', id: string, done: (a: any) => boolean, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const res = await api(berth.url, 'GET', `/sites/${slug}/${kind}/${id}/`, { key })
    expect(res.status, res.text).toBe(200)
    if (done(res.json.data)) return res.json.data
    if (Date.now() > deadline) throw new Error(`${kind} ${id}: still ${JSON.stringify(res.json.data)}`)
    await Bun.sleep(100)
  }
}

/** Takes a snapshot and waits until it is ready. */
async function snapshot(slug: string, key: string) {
  const res = await api(berth.url, 'POST', `/sites/${slug}/snapshot/`, { key })
  expect(res.status, res.text).toBe(200)
  expect(res.json.data.status).toBe('creating')
  return waitArchive(slug, key, 'snapshots', res.json.data.id, (a) => a.status !== 'creating')
}

/** Restores an archive and waits until the job is done (ready again with a new restored_at). */
async function restore(slug: string, key: string, kind: 'snapshots' | 'backups', id: string) {
  const res = await api(berth.url, 'POST', `/sites/${slug}/${kind}/${id}/restore/`, { key })
  expect(res.status, res.text).toBe(200)
  expect(res.json.data.status).toBe('restoring')
  return waitArchive(slug, key, kind, id, (a) => a.status !== 'restoring')
}

/** The stored archive file of `id` (`{archives}/{site_id}/{id}.tar.zst`), or undefined. */
function storedFile(id: string): string | undefined {
  const root = join(berth.dataDir, 'archives')
  for (const site of existsSync(root) ? readdirSync(root) : []) {
    const file = join(root, site, `${id}.tar.zst`)
    if (existsSync(file)) return file
  }
  return undefined
}

/** Every file of the home but the logs, with its owner, mode and SHA-256; links with their target. */
const FINGERPRINT = `find . -path ./logs -prune -o \\( -type f -printf '%u:%g %m %p ' -exec sha256sum {} \\; \\) -o \\( -type l -printf '%p -> %l\\n' \\) -o \\( -type d -printf '%u:%g %m %p/\\n' \\) | sort`

describe('snapshots on a vps site', () => {
  it('snapshot, change and delete files, restore: every file back byte for byte with its owner and mode; the site serves them again', async () => {
    const { slug, key } = await buyActive('svc_business_monthly')
    const written = await siteShell(slug, [
      'set -e',
      'head -c 2000000 /dev/urandom > public/data.bin',
      'echo "<h1>original $RANDOM</h1>" > public/page.html',
      'mkdir -p notes/deep && echo first > notes/deep/a.txt && chmod 600 notes/deep/a.txt',
      'ln -s public/page.html page-link',
      'echo "<?php echo 7 * 6;" > public/calc.php',
    ].join('\n'))
    expect(written.code, written.output).toBe(0)
    const before = (await siteShell(slug, FINGERPRINT)).output
    expect(before).toContain('./public/data.bin')
    const page = (await viaEdge(berth.url, slug, '/page.html')).text

    const snap = await snapshot(slug, key)
    expect(snap).toMatchObject({ kind: 'snapshot', status: 'ready', error: null, restored_at: null })
    expect(snap.file_count).toBeGreaterThanOrEqual(4)
    expect(snap.size_bytes).toBeGreaterThan(2_000_000)
    expect(storedFile(snap.id)).toBeDefined()

    const changed = await siteShell(slug, 'set -e; echo defaced > public/page.html; rm public/data.bin notes/deep/a.txt page-link; echo extra > public/extra.txt')
    expect(changed.code, changed.output).toBe(0)
    expect((await viaEdge(berth.url, slug, '/page.html')).text).toBe('defaced\n')

    const restored = await restore(slug, key, 'snapshots', snap.id)
    expect(restored.status).toBe('ready')
    expect(restored.error).toBeNull()
    expect(restored.restored_at).not.toBeNull()
    expect((await siteShell(slug, FINGERPRINT)).output).toBe(before)
    const served = await viaEdge(berth.url, slug, '/page.html')
    expect(served.status).toBe(200)
    expect(served.text).toBe(page)
    expect((await viaEdge(berth.url, slug, '/calc.php')).text).toBe('42')
    // Gone: nginx hands unknown paths to index.php, so the page is the PHP front page.
    expect((await viaEdge(berth.url, slug, '/extra.txt')).text).not.toContain('extra')

    const list = await api(berth.url, 'GET', `/sites/${slug}/snapshots/`, { key })
    expect(list.json.data.map((a: { id: string }) => a.id)).toEqual([snap.id])

    const file = storedFile(snap.id)!
    const gone = await api(berth.url, 'DELETE', `/sites/${slug}/snapshots/${snap.id}/`, { key })
    expect(gone.status, gone.text).toBe(200)
    expect(gone.json.data).toEqual({ id: snap.id, deleted: true })
    expect((await api(berth.url, 'GET', `/sites/${slug}/snapshots/`, { key })).json.data).toEqual([])
    expect(existsSync(file)).toBe(false)
  }, 180_000)

  it('is one moment of a site that keeps writing: the archive holds a matching pair', async () => {
    const { slug, key } = await buyActive('svc_business_monthly')
    // Bulk for tar to walk, so that without the freeze the writer would move on mid-archive.
    expect((await siteShell(slug, 'set -e; mkdir bulk; for i in $(seq 1 200); do head -c 50000 /dev/urandom > bulk/f$i; done')).code).toBe(0)
    // The writer: each generation writes a and b with the same random bytes, then points
    // `current` at it with an atomic rename and removes the generation before last. At every
    // instant `current` names a complete generation whose a and b match; only an archive of one
    // instant is sure to hold that.
    await siteShell(slug, [
      'mkdir -p pair; i=0',
      'while [ ! -e stop-writer ]; do',
      '  i=$((i+1)); mkdir pair/g$i',
      '  head -c 200000 /dev/urandom > pair/g$i/a; cp pair/g$i/a pair/g$i/b',
      '  ln -s g$i pair/next && mv -T pair/next pair/current',
      '  rm -rf pair/g$((i-2))',
      'done',
    ].join('\n'), { detach: true })
    await Bun.sleep(500)
    const generation = async () => (await siteShell(slug, 'readlink pair/current')).output.trim()
    const first = await generation()
    await Bun.sleep(300)
    expect(await generation()).not.toBe(first)

    // Measured with this writer and plain `tar` on the live volume (no freeze): 3 archives in 20
    // broke the pair; with `docker pause` around it, 0 in 20.
    for (let round = 0; round < 5; round++) {
      const snap = await snapshot(slug, key)
      expect(snap.status).toBe('ready')
      const dir = join(scratch, `${slug}-${round}`)
      mkdirSync(dir)
      writeFileSync(join(dir, 'a.tar'), zstdDecompressSync(readFileSync(storedFile(snap.id)!)))
      expect(Bun.spawnSync(['tar', '-xf', join(dir, 'a.tar'), '-C', dir]).exitCode).toBe(0)
      const current = readlinkSync(join(dir, 'pair', 'current'))
      expect(current).toMatch(/^g\d+$/)
      const a = readFileSync(join(dir, 'pair', current, 'a'))
      const b = readFileSync(join(dir, 'pair', current, 'b'))
      expect(a.length).toBe(200_000)
      expect(b.equals(a)).toBe(true)
    }
    await siteShell(slug, 'touch stop-writer')
  }, 180_000)

  it('403 on a shared plan; 404 for another account, an unknown snapshot or a backup id; 422 for a malformed id', async () => {
    const shared = await buyActive('svc_starter_monthly')
    const refused = await api(berth.url, 'POST', `/sites/${shared.slug}/snapshot/`, { key: shared.key })
    expect(refused.status).toBe(403)
    expect(refused.json.error.code).toBe('FORBIDDEN')
    expect(refused.json.error.message).toContain('vps and dedicated')

    const { slug, key } = await buyActive('svc_business_monthly')
    const snap = await snapshot(slug, key)
    const stranger = (await api(berth.url, 'POST', '/auth/register/', { body: {} })).json.data.api_key
    for (const [method, path] of [['POST', 'snapshot/'], ['GET', 'snapshots/'], ['POST', `snapshots/${snap.id}/restore/`], ['DELETE', `snapshots/${snap.id}/`], ['GET', 'backups/']] as const) {
      const res = await api(berth.url, method, `/sites/${slug}/${path}`, { key: stranger })
      expect(res.status, `${method} ${path}`).toBe(404)
      expect(res.json.error.code).toBe('NOT_FOUND')
    }
    const unknown = await api(berth.url, 'POST', `/sites/${slug}/snapshots/${crypto.randomUUID()}/restore/`, { key })
    expect(unknown.status).toBe(404)
    expect(unknown.json.error.param).toBe('snapshot_id')
    expect((await api(berth.url, 'POST', `/sites/${slug}/backups/${snap.id}/restore/`, { key })).status).toBe(404)
    const bad = await api(berth.url, 'DELETE', `/sites/${slug}/snapshots/not-a-uuid/`, { key })
    expect(bad.status).toBe(422)
    expect(bad.json.error.param).toBe('snapshot_id')
  }, 120_000)
})

describe('daily backups', () => {
  it('a shared site gets its first backup at a maintenance pass, and restoring it brings the files back', async () => {
    const { slug, key } = await buyActive('svc_starter_monthly')
    expect((await siteShell(slug, 'echo "<p>kept</p>" > public/index.html')).code).toBe(0)
    // Maintenance runs every 5 s here: the first pass after the site is active queues its backup.
    const deadline = Date.now() + 45_000
    let backup: any
    for (;;) {
      const list = await api(berth.url, 'GET', `/sites/${slug}/backups/`, { key })
      expect(list.status).toBe(200)
      backup = list.json.data.find((b: { status: string }) => b.status === 'ready')
      if (backup) break
      if (Date.now() > deadline) throw new Error(`no backup yet: ${list.text}`)
      await Bun.sleep(500)
    }
    expect(backup).toMatchObject({ kind: 'backup', error: null })
    expect(backup.file_count).toBeGreaterThanOrEqual(1)

    await siteShell(slug, 'echo broken > public/index.html')
    expect((await viaEdge(berth.url, slug)).text).toBe('broken\n')
    const restored = await restore(slug, key, 'backups', backup.id)
    expect(restored.restored_at).not.toBeNull()
    const page = await viaEdge(berth.url, slug)
    expect(page.status).toBe(200)
    expect(page.text).toBe('<p>kept</p>\n')
  }, 120_000)
})
