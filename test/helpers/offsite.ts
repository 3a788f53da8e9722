import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { zstdDecompressSync } from 'node:zlib'
import { generateX25519Identity, identityToRecipient } from 'age-encryption'
import { onTestFinished } from 'vitest'
import { buildOffsite } from '../../src/compose/offsite'
import { loadConfig } from '../../src/config/config'
import { ArchiveEvents } from '../../src/domain/archives/events'
import { ArchivesRepository } from '../../src/domain/archives/repository'
import { ArchiveRetention } from '../../src/domain/archives/retention'
import { OffsiteCopiesRepository } from '../../src/domain/offsite/repository'
import { LocalArchiveStore } from '../../src/drivers/archives/local'
import { openBytes } from '../../src/drivers/offsite/age'
import { FolderDestination } from '../../src/drivers/offsite/folder'
import type { OffsiteDestination } from '../../src/drivers/offsite/types'
import { domainStore } from './domain-store'

/**
 * The copier as src/compose/offsite.ts builds it, on a real SQLite store (domainStore), a real
 * archive store, a real FolderDestination in a temporary folder (`root`), real age keys (the
 * hoster's identity is `hoster`) and a real tls folder. `destination` wraps the folder so a test
 * can make it fail (`fail(reason)`) or hang (`hang()`) on cue, as an unreachable bucket does.
 */
export async function offsiteSetup(opts: { intervalSeconds?: number; backupsKept?: number } = {}) {
  const t = domainStore()
  const root = mkdtempSync(join(tmpdir(), 'berth-offsite-dest-'))
  onTestFinished(() => rmSync(root, { recursive: true, force: true }))
  const hoster = await generateX25519Identity()
  const config = loadConfig({
    file: null,
    env: {
      BERTH_SERVER_DATA_DIR: t.dir,
      BERTH_OFFSITE_URL: `file://${root}`,
      BERTH_OFFSITE_AGE_RECIPIENTS: await identityToRecipient(hoster),
      BERTH_OFFSITE_STORE_INTERVAL_SECONDS: String(opts.intervalSeconds ?? 300),
      BERTH_ARCHIVES_BACKUPS_KEPT: String(opts.backupsKept ?? 7),
    },
  })
  const folder = new FolderDestination(root)
  let failure: Error | null = null
  let hanging = false
  const hung: ((err: Error) => void)[] = []
  onTestFinished(() => hung.forEach((fail) => fail(new Error('the test ended'))))
  const gate = async () => {
    if (failure) throw failure
    if (hanging) await new Promise((_, fail) => hung.push(fail))
  }
  const destination: OffsiteDestination = {
    describe: folder.describe,
    // Hanging, a put writes the body's first chunk to its partial file and then waits for ever:
    // a process killed there leaves what a kill -9 mid-copy leaves.
    put: async (key, body) => {
      if (failure) throw failure
      if (!hanging) return folder.put(key, body)
      const reader = body.getReader()
      const first = await reader.read()
      return folder.put(key, new ReadableStream({
        start(c) {
          if (!first.done) c.enqueue(first.value)
        },
        // Released when the test ends (the put closes its file and removes its partial).
        pull: () => new Promise((_, fail) => hung.push(fail)),
      }))
    },
    get: async (key) => (await gate(), folder.get(key)),
    list: async (prefix) => (await gate(), folder.list(prefix)),
    delete: async (key) => (await gate(), folder.delete(key)),
    probe: async () => (await gate(), folder.probe()),
    sweep: () => folder.sweep(),
  }
  const repo = new OffsiteCopiesRepository(t.store)
  const events = new ArchiveEvents()
  const build = () => buildOffsite({ config, store: t.store, clock: t.clock, log: t.log, instanceId: 'test1234', repo }, events, { destination })!
  const offsite = build()
  const archivesRepo = new ArchivesRepository(t.store)
  const files = new LocalArchiveStore(config.archives.dir)
  const retention = new ArchiveRetention(archivesRepo, files, t.log, events)
  const plan = t.plans.list()[0]!.slug

  /** A site of a new account. */
  function site(slug = `s${crypto.randomUUID().slice(0, 8)}`): { id: string; slug: string } {
    const id = crypto.randomUUID()
    t.store.sqlite.prepare("insert into sites (id, account_id, slug, plan_slug, status, created_at, updated_at) values (?, ?, ?, ?, 'active', ?, ?)").run(id, t.account(), slug, plan, t.clock.now(), t.clock.now())
    return { id, slug }
  }

  /** A ready backup (or snapshot) of the site holding `bytes` in the local archive store, told as the archive job tells it. */
  async function archive(siteId: string, bytes: Uint8Array | string = crypto.getRandomValues(new Uint8Array(200_000)), kind: 'backup' | 'snapshot' = 'backup') {
    const id = crypto.randomUUID()
    const storageKey = `${siteId}/${id}.tar.zst`
    const row = archivesRepo.insert({ id, siteId, kind, storageKey, createdAt: t.clock.now() })
    const work = join(t.dir, `work-${id}`)
    writeFileSync(work, bytes)
    await files.put(storageKey, work)
    archivesRepo.transition(id, ['creating'], { status: 'ready', completedAt: t.clock.now(), sizeBytes: typeof bytes === 'string' ? bytes.length : bytes.byteLength })
    events.ready(archivesRepo.find(id)!)
    return { ...row, storageKey, key: `archives/${storageKey}.age` }
  }

  /** Every complete object at the destination (never a partial one), sorted. */
  function objects(prefix = ''): string[] {
    const found: string[] = []
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, e.name)
        if (e.isDirectory()) walk(path)
        else if (!e.name.includes('.partial')) found.push(relative(root, path))
      }
    }
    walk(root)
    return found.filter((k) => k.startsWith(prefix)).sort()
  }

  /** An object opened with the hoster's identity. */
  async function open(key: string): Promise<Uint8Array> {
    return openBytes(new Uint8Array(await Bun.file(join(root, key)).arrayBuffer()), [hoster])
  }

  /** The store copy under `key`, opened, decompressed and written to a file of its own. */
  async function storeCopyFile(key: string): Promise<string> {
    const file = join(t.dir, `restored-${crypto.randomUUID().slice(0, 8)}.db`)
    writeFileSync(file, zstdDecompressSync(await open(key)))
    return file
  }

  /** A tls folder like Berth's: a certificate with its key, and the ACME account. */
  function tlsFiles(content = 'cert'): void {
    mkdirSync(join(t.dir, 'tls', 'certs'), { recursive: true })
    mkdirSync(join(t.dir, 'tls', 'acme'), { recursive: true })
    writeFileSync(join(t.dir, 'tls', 'certs', 'site.pem'), content)
    writeFileSync(join(t.dir, 'tls', 'acme', 'account.json'), '{"key":"x"}')
  }

  return {
    t, root, hoster, config, repo, events, offsite, copier: offsite.copier, build, archivesRepo, files, retention, site, archive, objects, open, storeCopyFile, tlsFiles,
    fail: (reason: string | null) => void (failure = reason === null ? null : new Error(reason)),
    hang: (on = true) => void (hanging = on),
    exists: (key: string) => statSync(join(root, key), { throwIfNoEntry: false }) !== undefined,
  }
}

export type OffsiteSetup = Awaited<ReturnType<typeof offsiteSetup>>
