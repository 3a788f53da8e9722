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

/** The dumps of an archive being made (ArchiveDumps.begin). */
export interface DumpRun {
  /** Every dump has taken the moment its data is of: the site may thaw. */
  taken: Promise<void>
  /** Every dump is complete, with its manifest; rejects when one failed. */
  done: Promise<{ databases: number; bytes: number }>
}

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
   * Starts a dump of each database of the site whose server runs, all at once, into the work
   * folder. Meant to be called while the site is frozen, right after its home's tar, and the
   * freeze held until `taken` resolves: each dump has then taken the moment its data is of, the
   * moment of the files. PostgreSQL's pg_dump works in one transaction begun before it reads
   * anything, and writes its first byte after (its custom format starts with the catalog it read
   * in it); Redis's RDB is made by a fork at the start of the sync, before its first byte; so
   * for these the first byte is enough. mariadb-dump writes a header before it starts its
   * transaction, so a MariaDB dump is waited for whole. `taken` rejects when a dump fails before.
   */
  begin(site: SiteRow, id: string): DumpRun {
    const which = this.d.databases?.dumpable(site) ?? []
    if (which.length === 0) return { taken: Promise.resolve(), done: Promise.resolve({ databases: 0, bytes: 0 }) }
    const dir = this.d.work.path(dumpsOf(id))
    const prepared = this.d.files.freshDumps(dir)
    const runs = which.map((db) => {
      const file = `${db.name}.${db.engine}`
      let firstByte!: () => void
      const started = new Promise<void>((resolve) => (firstByte = resolve))
      const dumped = prepared.then(() => this.d.databases!.dump(site, db.name, this.d.files.dumpWriter(dir, file, firstByte)))
      const entry = dumped.then(({ bytes }): DumpEntry => ({ name: db.name, engine: db.engine, file, bytes }))
      // Whole for MariaDB; for the others, whichever comes first of the first byte and the end.
      const taken = db.engine === 'mariadb' ? entry.then(() => undefined) : Promise.race([started, entry.then(() => undefined)])
      return { entry, taken }
    })
    const settled = Promise.allSettled(runs.map((r) => r.entry))
    const done = settled.then(async (results) => {
      const failed = results.find((r) => r.status === 'rejected')
      if (failed) throw failed.reason
      return results.map((r) => (r as PromiseFulfilledResult<DumpEntry>).value)
    }).then(async (entries) => {
      const manifest: DumpManifest = { format: 1, taken_at: this.d.clock.now(), databases: entries }
      await this.d.files.writeManifest(dir, manifest)
      return { databases: entries.length, bytes: entries.reduce((n, e) => n + e.bytes, 0) }
    })
    // A dump failing before its snapshot: the others are waited for before the caller goes on.
    const taken = Promise.all(runs.map((r) => r.taken)).then(() => undefined, async (err) => {
      await settled
      throw err
    })
    done.catch(() => undefined)
    return { taken, done }
  }

  /** Waits for the dumps `begin` started and appends them with their manifest to the home's `tarFile`. */
  async finish(run: DumpRun, id: string, tarFile: string): Promise<{ databases: number; bytes: number }> {
    const dumped = await run.done
    if (dumped.databases > 0) await this.d.files.appendDumps(tarFile, this.d.work.path(dumpsOf(id)))
    await this.d.work.remove(dumpsOf(id))
    return dumped
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
 * bytes fetched and decompressed into a work folder of its own (the archive jobs' one is swept of
 * what no job holds, and the archive stays `ready` meanwhile), its dumps taken out, `fn` run, all
 * removed. What a crash left there goes at the next restore that finds none running.
 */
export class ArchiveDumpReader {
  private running = 0
  private dumps: ArchiveDumps

  constructor(private d: { repo: ArchivesRepository; files: ArchiveStore; tar: Pick<HomeTarballs, 'decompressFile'>; work: WorkFolder; dumpFiles: DumpFiles; clock: Clock; log: Logger }) {
    this.dumps = new ArchiveDumps({ files: d.dumpFiles, work: d.work, clock: d.clock, log: d.log })
  }

  /** The site's archive `id` (a snapshot or backup not deleted), or undefined (another site's too). */
  find(siteId: string, id: string): Pick<ArchiveRow, 'id' | 'kind' | 'status'> | undefined {
    const row = this.d.repo.find(id)
    return row && row.siteId === siteId && row.status !== 'deleted' ? row : undefined
  }

  async withDumps<T>(id: string, fn: (manifest: DumpManifest | null, open: OpenDump) => Promise<T>): Promise<T> {
    const row = this.d.repo.find(id)!
    const token = `${id}.db-${crypto.randomUUID().slice(0, 8)}`
    const [zstName, tarName] = [`${token}.tar.zst`, `${token}.tar`]
    const first = this.running++ === 0
    try {
      await this.d.work.prepare()
      if (first) await this.d.work.remove(...(await this.d.work.list()))
      await this.d.files.get(row.storageKey!, this.d.work.path(zstName))
      await this.d.tar.decompressFile(this.d.work.path(zstName), this.d.work.path(tarName))
      await this.d.work.remove(zstName)
      const manifest = await this.dumps.take(token, this.d.work.path(tarName))
      return await fn(manifest, this.dumps.opener(token))
    } finally {
      this.running--
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
