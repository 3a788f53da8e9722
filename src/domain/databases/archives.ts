import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { ArchiveDatabases, DumpEntry, DumpManifest, OpenDump } from '../archives'
import type { AuditActor, AuditTrail } from '../audit'
import { conflict, DomainError, forbidden, invalid, notFound, op, say, unavailable } from '../errors'
import type { PlansService } from '../plans'
import type { DatabaseRuntime } from './ports'
import type { DatabasesRepository, SiteDatabaseRow } from './repository'
import type { DatabasesService } from './service'
import type { DatabaseView } from './views'

/** The site's archives as a restore of one database reads them (domain/archives ArchiveDumpReader). */
export interface ArchiveDumpSource {
  find(siteId: string, id: string): { id: string; kind: string; status: string } | undefined
  withDumps<T>(id: string, fn: (manifest: DumpManifest | null, open: OpenDump) => Promise<T>): Promise<T>
}

export interface DatabaseArchivesDeps {
  service: Pick<DatabasesService, 'get' | 'specOf' | 'opened' | 'whileBusy'>
  repo: DatabasesRepository
  runtime: DatabaseRuntime
  plans: Pick<PlansService, 'get'>
  audit: AuditTrail
  clock: Clock
  log: Logger
  archives: ArchiveDumpSource
  /** The site's variables changed (a database came back). */
  changed(site: SiteRow): Promise<void>
  /** How long a dump waits for a database that is being brought back (default RECOVERY_WAIT_MS). */
  recoveryWaitMs?: number
}

/**
 * The databases in the site's snapshots and backups (issue 40 item 3, docs/api.md "Databases",
 * Backups): the archive jobs dump each database whose server runs and put every dump back on a
 * restore (ArchiveDatabases); one database is restored alone from an archive, or brought back as
 * it was when it was deleted and is still in its grace (`restore`).
 */
/** How long an archive's dump waits for a database that is being brought back. */
const RECOVERY_WAIT_MS = 60_000

export class DatabaseArchives implements ArchiveDatabases {
  constructor(private d: DatabaseArchivesDeps) {}

  /** Those whose server runs, or is being brought back (`recovering`: its dump waits for it, never left out). */
  dumpable(site: SiteRow): Array<{ name: string; engine: string }> {
    return this.d.repo.list(site.id).filter((r) => r.state === 'available' || r.state === 'recovering').map((r) => ({ name: r.name, engine: r.engine }))
  }

  /**
   * The engine's own dump of the database into `to`. One that is `recovering` is waited for (up to
   * RECOVERY_WAIT_MS): an archive holds every database's data or fails, never leaves one out.
   */
  async dump(site: SiteRow, name: string, to: NodeJS.WritableStream): Promise<{ bytes: number }> {
    const waitMs = this.d.recoveryWaitMs ?? RECOVERY_WAIT_MS
    let row = this.d.repo.find(site.id, name)
    for (const deadline = this.d.clock.now() + waitMs; row?.state === 'recovering' && this.d.clock.now() < deadline; row = this.d.repo.find(site.id, name)) await Bun.sleep(Math.min(250, waitMs))
    if (row?.state === 'recovering') throw new Error(`the database ${name} is still being brought back after ${Math.round(waitMs / 1000)} s${row.error ? ` (${row.error})` : ''}`)
    if (!row) throw new Error(`the database ${name} is gone`)
    return this.d.runtime.dump(this.d.service.specOf(site, row, this.d.service.opened(row) ?? ''), to)
  }

  /**
   * Each dump back into its database, the site not running: one deleted since (in its grace)
   * comes back with its volume, password and variables. Databases made after the archive, and a
   * dump whose database is gone for good or has another engine now, are left as they are. The
   * site's app is not told (it does not run): it starts next with the variables of those back.
   */
  async restoreAll(site: SiteRow, entries: DumpEntry[], open: OpenDump): Promise<void> {
    for (const entry of entries) {
      const row = this.d.repo.find(site.id, entry.name)
      if (!row || row.engine !== entry.engine || row.state === 'creating' || row.state === 'failed') {
        this.d.log.warn('databases: a dump of an archive has no database to go back into', { site: site.slug, name: entry.name, engine: entry.engine, state: row?.state ?? 'none' })
        continue
      }
      if (row.state === 'deleted' && !this.hasRoom(site)) {
        // The plan's limit holds: it stays deleted (in its grace), restorable alone once another goes.
        this.d.log.warn('databases: a deleted database of an archive stays deleted: the plan has no room for it', { site: site.slug, name: entry.name })
        continue
      }
      await this.d.service.whileBusy(site, row.name, () => this.putBack(site, row, entry, open))
    }
  }

  /**
   * `POST .../databases/{name}/restore/`: with `archive_id`, the database's data from that archive
   * of the site (a snapshot or backup holding its dump); without, a deleted database in its grace
   * back as it was (its volume was kept). Audited. A deleted one counts against the plan again.
   */
  async restore(site: SiteRow, name: string, archiveId: string | undefined, actor: AuditActor): Promise<DatabaseView> {
    const row = this.d.repo.find(site.id, name)
    if (!row) throw notFound(say`'${site.slug}' has no database '${name}'; ${op('listDatabases', { tenant_slug: site.slug })} lists them.`, 'name')
    if (row.state === 'creating' || row.state === 'failed') throw conflict(say`Database '${name}' is ${row.state}; it has no data to restore. Create it again (${op('createDatabase', { tenant_slug: site.slug })}).`, 'name')
    if (archiveId === undefined && row.state !== 'deleted') {
      throw conflict(say`Database '${name}' is ${row.state}, not deleted; give archive_id (${op('listBackups', { tenant_slug: site.slug })}, ${op('listSnapshots', { tenant_slug: site.slug })}) to restore its data from a backup or snapshot.`, 'archive_id')
    }
    if (row.state === 'deleted') this.checkRoom(site)
    const archive = archiveId === undefined ? undefined : this.d.archives.find(site.id, archiveId)
    if (archiveId !== undefined && !archive) throw notFound(say`'${site.slug}' has no snapshot or backup '${archiveId}'.`, 'archive_id')
    if (archive && archive.status !== 'ready') throw conflict(say`The ${archive.kind} '${archive.id}' is ${archive.status}; only a ready one can be restored from.`, 'archive_id')
    const record = this.d.audit.begin({ siteId: site.id, kind: 'database', actor, command: archive ? `restore ${name} from ${archive.kind} ${archive.id}` : `restore ${name}` })
    try {
      await this.d.service.whileBusy(site, name, async () => {
        if (!archive) return this.putBack(site, row, null, null)
        await this.d.archives.withDumps(archive.id, async (manifest, open) => {
          const entry = manifest?.databases.find((e) => e.name === name)
          if (!entry || entry.engine !== row.engine) {
            const held = manifest?.databases.map((e) => `${e.name} (${e.engine})`).join(', ') || 'none'
            throw invalid('archive_id', say`The ${archive.kind} '${archive.id}' holds no dump of the ${row.engine} database '${name}' (it holds: ${held}); choose one made while it existed.`)
          }
          await this.putBack(site, row, entry, open)
        })
      })
    } catch (err) {
      record.end({ exitCode: 1, reason: (err as Error).message.slice(0, 200) })
      throw err
    }
    record.end({ exitCode: 0 })
    if (row.state === 'deleted') await this.d.changed(site)
    return this.d.service.get(site, name)
  }

  /** Starts the database's server (its volume kept), puts the dump in when there is one, and marks it available (stopped again when it was). */
  private async putBack(site: SiteRow, row: SiteDatabaseRow, entry: DumpEntry | null, open: OpenDump | null): Promise<void> {
    const password = this.d.service.opened(row)
    if (password === null) throw conflict(say`This box cannot open the password of '${row.name}'; it cannot be restored here.`, 'name')
    const spec = this.d.service.specOf(site, row, password)
    try {
      await this.d.runtime.ensure(spec)
      if (entry && open) await this.d.runtime.restore(spec, await open(entry))
    } catch (err) {
      if (err instanceof DomainError) throw err
      this.d.log.warn('databases: a restore failed', { site: site.slug, name: row.name, error: (err as Error).message })
      throw unavailable(say`The data of '${row.name}' could not be restored: ${(err as Error).message} Retry in a minute.`)
    }
    if (row.state === 'stopped') await this.d.runtime.stop(site.slug, row.name)
    if (row.state === 'deleted') this.d.repo.update(row.id, { state: 'available', deletedAt: null, error: null, updatedAt: this.d.clock.now() })
  }

  private held(site: SiteRow): number {
    return this.d.repo.list(site.id).filter((r) => r.state !== 'deleted' && r.state !== 'failed').length
  }

  private hasRoom(site: SiteRow): boolean {
    return this.held(site) < this.d.plans.get(site.planSlug).features.databases.max
  }

  private checkRoom(site: SiteRow): void {
    const plan = this.d.plans.get(site.planSlug)
    const max = plan.features.databases.max
    const held = this.held(site)
    if (held >= max) throw forbidden(say`'${site.slug}' has ${held} of the ${max} database${max === 1 ? '' : 's'} the ${plan.slug} plan allows; delete one (${op('deleteDatabase', { tenant_slug: site.slug })}) before bringing this one back.`, null)
  }
}
