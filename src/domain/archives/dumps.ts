import type { ArchiveStore } from '../../drivers/archives/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { ArchiveRow, SiteRow } from '../../store/schema'
import type { ArchivesRepository } from './repository'
import type { DumpFiles, HomeTarballs, WorkFolder } from './tarballs'

/** One database an archive holds: its dump is the file `file` (`{name}.{engine}`) of `.berth-databases/`. */
export interface DumpEntry { name: string; engine: string; file: string; bytes: number }

/** `.berth-databases/manifest.json`: what the dumps are and when they were taken. */
export interface DumpManifest { format: 1; taken_at: number; databases: DumpEntry[] }

/** Reads one dump of an archive taken out of its tarball. */
export type OpenDump = (entry: DumpEntry) => Promise<NodeJS.ReadableStream>

/**
 * The site's databases as its archives hold them (domain/databases/archives.ts implements it):
 * the archive jobs dump them with the home's files and put them back with them.
 */
export interface ArchiveDatabases {
  /** The databases an archive of the site holds now: those whose server runs. */
  dumpable(site: SiteRow): Array<{ name: string; engine: string }>
  /** A consistent dump of one of them in its engine's own format; rejects on any failure. */
  dump(site: SiteRow, name: string, to: NodeJS.WritableStream): Promise<{ bytes: number }>
  /** Puts each dump back into its database (one deleted since comes back); the site does not run meanwhile. */
  restoreAll(site: SiteRow, entries: DumpEntry[], open: OpenDump): Promise<void>
}

const FILE = /^[a-z][a-z0-9_]{0,30}\.[a-z]{1,16}$/

export interface ArchiveDumpsDeps {
  files: DumpFiles
  work: WorkFolder
  clock: Clock
  log: Logger
  /** The databases area, set once it is built (it is built after the archive jobs). */
  databases?: ArchiveDatabases
}

/**
 * Dumps in archives: taken into `{archive_id}.dumps` of the work folder and appended to the home's
 * tar under `.berth-databases/` (so a copy off the box carries them with nothing more), and taken
 * out again before a restore puts the home's files back.
 */
export class ArchiveDumps {
  constructor(private d: ArchiveDumpsDeps) {}

  set databases(databases: ArchiveDatabases) {
    this.d.databases = databases
  }

  /**
   * Dumps each database of the site whose server runs and appends them with their manifest to
   * `tarFile`. Meant to run while the site is frozen, right after its home's tar: files and data
   * are of the same moment. Any dump failing rejects (the archive is not made ready).
   */
  async add(site: SiteRow, id: string, tarFile: string): Promise<{ databases: number; bytes: number }> {
    const which = this.d.databases?.dumpable(site) ?? []
    if (which.length === 0) return { databases: 0, bytes: 0 }
    const dir = this.d.work.path(dumpsOf(id))
    await this.d.files.freshDumps(dir)
    const entries: DumpEntry[] = []
    for (const db of which) {
      const file = `${db.name}.${db.engine}`
      const { bytes } = await this.d.databases!.dump(site, db.name, this.d.files.dumpWriter(dir, file))
      entries.push({ name: db.name, engine: db.engine, file, bytes })
    }
    const manifest: DumpManifest = { format: 1, taken_at: this.d.clock.now(), databases: entries }
    await this.d.files.writeManifest(dir, manifest)
    await this.d.files.appendDumps(tarFile, dir)
    await this.d.work.remove(dumpsOf(id))
    return { databases: entries.length, bytes: entries.reduce((n, e) => n + e.bytes, 0) }
  }

  /**
   * Takes the dumps out of the archive's uncompressed `tarFile` into `{archive_id}.dumps` (the tar
   * keeps the home's files alone); their manifest, or null when the archive holds none.
   */
  async take(id: string, tarFile: string): Promise<DumpManifest | null> {
    const dir = this.d.work.path(dumpsOf(id))
    if (!(await this.d.files.takeDumps(tarFile, dir))) return null
    return manifestOf(await this.d.files.readManifest(dir))
  }

  /** Reads a dump taken out by `take`. */
  opener(id: string): OpenDump {
    const dir = this.d.work.path(dumpsOf(id))
    return (entry) => this.d.files.dumpReader(dir, entry.file)
  }

  /** Puts the dumps taken out by `take` back into the site's databases. */
  async restore(site: SiteRow, id: string, manifest: DumpManifest | null): Promise<number> {
    if (!manifest || manifest.databases.length === 0 || !this.d.databases) return 0
    await this.d.databases.restoreAll(site, manifest.databases, this.opener(id))
    return manifest.databases.length
  }

  async clear(id: string): Promise<void> {
    await this.d.work.remove(dumpsOf(id))
  }
}

/**
 * An archive's dumps for a restore of one database (domain/databases/archives.ts): the archive's
 * bytes fetched and decompressed into the work folder, its dumps taken out, `fn` run, all removed.
 */
export class ArchiveDumpReader {
  constructor(private d: { repo: ArchivesRepository; files: ArchiveStore; tar: Pick<HomeTarballs, 'decompressFile'>; work: WorkFolder; dumps: ArchiveDumps }) {}

  /** The site's archive `id` (a snapshot or backup not deleted), or undefined (another site's too). */
  find(siteId: string, id: string): Pick<ArchiveRow, 'id' | 'kind' | 'status'> | undefined {
    const row = this.d.repo.find(id)
    return row && row.siteId === siteId && row.status !== 'deleted' ? row : undefined
  }

  async withDumps<T>(id: string, fn: (manifest: DumpManifest | null, open: OpenDump) => Promise<T>): Promise<T> {
    const row = this.d.repo.find(id)!
    const token = `${id}.db-${crypto.randomUUID().slice(0, 8)}`
    const [zstName, tarName] = [`${token}.tar.zst`, `${token}.tar`]
    await this.d.work.prepare()
    try {
      await this.d.files.get(row.storageKey!, this.d.work.path(zstName))
      await this.d.tar.decompressFile(this.d.work.path(zstName), this.d.work.path(tarName))
      await this.d.work.remove(zstName)
      const manifest = await this.d.dumps.take(token, this.d.work.path(tarName))
      return await fn(manifest, this.d.dumps.opener(token))
    } finally {
      await this.d.work.remove(zstName, tarName, dumpsOf(token))
    }
  }
}

const dumpsOf = (id: string) => `${id}.dumps`

/** The manifest as written by `add`; anything else is no dumps at all. */
function manifestOf(raw: unknown): DumpManifest | null {
  if (!raw || typeof raw !== 'object') return null
  const m = raw as Partial<DumpManifest>
  if (m.format !== 1 || !Array.isArray(m.databases)) return null
  const databases = m.databases.filter((e): e is DumpEntry =>
    !!e && typeof e.name === 'string' && typeof e.engine === 'string' && typeof e.file === 'string' && e.file === `${e.name}.${e.engine}` && FILE.test(e.file))
  return { format: 1, taken_at: typeof m.taken_at === 'number' ? m.taken_at : 0, databases }
}
