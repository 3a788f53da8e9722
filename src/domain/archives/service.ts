import type { JobRunner } from '../../jobs/runner'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { ArchiveRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { conflict, forbidden, notFound, op, say } from '../errors'
import type { PlansService } from '../plans'
import type { BoxRoom } from '../room'
import { requireChangeable, type SiteRecords } from '../sites'
import { CREATE_ARCHIVE_JOB, RESTORE_ARCHIVE_JOB } from './jobs'
import type { ArchiveView } from './views'
import type { ArchiveKind, ArchivesRepository } from './repository'
import type { ArchiveRetention } from './retention'
import type { WorkFolder } from './tarballs'

/**
 * Backups made at once, over all sites. They share the job runner with provisioning; a wave of
 * due backups (the first start of an upgraded installation, say) must not make a purchase wait
 * behind hundreds of them. At one maintenance pass per 30 s that is up to 11,520 backups a day.
 */
const MAX_BACKUPS_IN_FLIGHT = 4
/** A failed backup is tried again after this long (or the backup interval, when shorter). */
const FAILED_BACKUP_RETRY_MS = 60 * 60 * 1000

const PARAM: Record<ArchiveKind, string> = { snapshot: 'snapshot_id', backup: 'backup_id', deployment: 'deployment_id' }

export interface ArchivesServiceDeps {
  store: Store
  clock: Clock
  repo: ArchivesRepository
  retention: ArchiveRetention
  sites: Pick<SiteRecords, 'find' | 'listWithStatus'>
  plans: Pick<PlansService, 'get' | 'list'>
  jobs: Pick<JobRunner, 'enqueue' | 'kick'>
  /** config `archives`: snapshots kept per site, how often backups are made. */
  config: { snapshotsPerSite: number; backupIntervalSeconds: number }
  /** Where the jobs keep their work files (to clear what a crash left). */
  work: Pick<WorkFolder, 'list' | 'remove'>
  log: Logger
  /** Which archives have a copy off the box (domain/offsite); none without it. */
  copies?: { copiedArchiveIds(archiveIds: string[]): Set<string> }
  /** The box's reserve of free space: under it snapshots are refused (507) and backups wait. */
  room?: Pick<BoxRoom, 'ensureRoom' | 'isLow'>
}

/**
 * Snapshots (on request, vps and dedicated plans) and the automatic daily backups (every plan) of
 * sites' files, as design.md's "Sites" describes; decisions in docs/api.md. Making and restoring
 * an archive are jobs (./jobs.ts); this answers the API, schedules backups and removes archives.
 */
export class ArchivesService {
  /** Backups are held back for lack of room (logged once as it starts and once as it ends). */
  private heldBack = false

  constructor(private d: ArchivesServiceDeps) {}

  /** The site's snapshots or backups, newest first. Listing works on every plan. */
  list(site: SiteRow, kind: ArchiveKind): ArchiveView[] {
    return this.views(this.d.repo.listOf(site.id, kind))
  }

  get(site: SiteRow, kind: ArchiveKind, id: string): ArchiveView {
    return this.views([this.requireArchive(site, kind, id)])[0]!
  }

  /** The views of archives, with where each is kept (one query for the copies of the whole list). */
  private views(rows: ArchiveRow[]): ArchiveView[] {
    const offsite = this.d.copies?.copiedArchiveIds(rows.map((r) => r.id)) ?? new Set<string>()
    return rows.map((row) => archiveView(row, offsite.has(row.id)))
  }

  /**
   * createSnapshot: records a snapshot in `creating` and queues the job that makes
   * it. forbidden on a plan without snapshots; conflict when the site holds `snapshots_per_site` already.
   */
  createSnapshot(owned: SiteRow): ArchiveView {
    const slug = owned.slug
    const row = this.d.store.write(() => {
      const site = requireChangeable(this.d.sites.find(owned.id)!)
      this.requireSnapshots(site)
      const max = this.d.config.snapshotsPerSite
      if (this.d.repo.countWithStatus(site.id, 'snapshot', ['creating', 'ready', 'restoring']) >= max) {
        throw conflict(say`Site '${slug}' has ${max} snapshots, the most a site keeps; delete one first (${op('deleteSnapshot', { tenant_slug: slug })}).`)
      }
      this.d.room?.ensureRoom('snapshots')
      return this.enqueueCreate(site.id, 'snapshot')
    })
    this.d.jobs.kick()
    return archiveView(row, false)
  }

  /**
   * Starts putting a ready archive back on its site; answers the archive in `restoring`, `ready`
   * again with a new `restored_at` once the site serves the restored files. conflict when the archive
   * is not ready or another restore of the site is running.
   */
  restore(owned: SiteRow, kind: ArchiveKind, id: string): ArchiveView {
    const slug = owned.slug
    const row = this.d.store.write(() => {
      const site = requireChangeable(this.d.sites.find(owned.id)!)
      if (kind === 'snapshot') this.requireSnapshots(site)
      const archive = this.requireArchive(site, kind, id)
      if (archive.status !== 'ready') {
        throw conflict(`This ${kind} is ${archive.status}, not ready; ${archive.status === 'creating' ? 'wait until it is ready' : archive.status === 'restoring' ? 'it is being restored now' : 'restore another one'}.`, PARAM[kind])
      }
      if (this.d.repo.restoringOf(site.id)) {
        throw conflict(`Another restore or a rollback of site '${slug}' is running; wait until it is done (its archive, or its deployment, says so).`)
      }
      this.d.repo.transition(id, ['ready'], { status: 'restoring' })
      this.d.jobs.enqueue(RESTORE_ARCHIVE_JOB, id)
      return this.d.repo.find(id)!
    })
    this.d.jobs.kick()
    return this.views([row])[0]!
  }

  /** deleteSnapshot: the row and the stored file go at once. */
  async deleteSnapshot(site: SiteRow, id: string): Promise<{ id: string; deleted: true }> {
    const slug = site.slug
    const archive = this.requireArchive(site, 'snapshot', id)
    const busy = () => conflict(`This snapshot is ${archive.status}; delete it once that is done.`, 'snapshot_id')
    if (archive.status !== 'ready' && archive.status !== 'failed') throw busy()
    if (!(await this.d.retention.discard(archive, ['ready', 'failed']))) throw busy()
    this.d.log.info('snapshot deleted', { site: slug, archive: id })
    return { id, deleted: true }
  }

  /**
   * Periodic upkeep (every maintenance pass): queues due backups, settles archives whose job
   * ended without its failure handler, completes interrupted removals and clears work files
   * nothing uses. Never throws; problems are logged.
   */
  async maintain(): Promise<void> {
    try {
      this.settleStranded()
      this.scheduleBackups()
      await this.d.retention.finishDeletions()
      await this.clearWorkFiles()
    } catch (err) {
      this.d.log.error('archive upkeep failed', { error: (err as Error).message })
    }
  }

  /**
   * Queues a backup for each active site that is due, oldest-backed-up first, at most
   * MAX_BACKUPS_IN_FLIGHT at once. Due: no backup yet (so the first comes at the first pass after
   * the site turns active), or the newest is older than `backup_interval_seconds`; after a
   * failed one, an hour later (or the interval, when shorter). Returns how many were queued.
   */
  scheduleBackups(): number {
    if (this.holdBackups()) return 0
    const now = this.d.clock.now()
    const interval = this.d.config.backupIntervalSeconds * 1000
    const retry = Math.min(interval, FAILED_BACKUP_RETRY_MS)
    const room = MAX_BACKUPS_IN_FLIGHT - this.d.repo.countAll('backup', ['creating'])
    if (room <= 0) return 0
    const newest = new Map<string, { made?: number; failed?: number; creating: boolean }>()
    for (const { siteId, status, newest: at } of this.d.repo.newestBackups()) {
      const entry = newest.get(siteId) ?? { creating: false }
      if (status === 'creating') entry.creating = true
      else if (status === 'failed') entry.failed = at
      else entry.made = Math.max(entry.made ?? -Infinity, at)
      newest.set(siteId, entry)
    }
    const due: { site: SiteRow; since: number }[] = []
    for (const site of this.d.sites.listWithStatus(['active'])) {
      const last = newest.get(site.id)
      if (last?.creating) continue
      if (last?.made !== undefined && now - last.made < interval) continue
      if (last?.failed !== undefined && last.failed > (last.made ?? -Infinity) && now - last.failed < retry) continue
      due.push({ site, since: last?.made ?? -Infinity })
    }
    if (due.length === 0) return 0
    const chosen = due.sort((a, b) => a.since - b.since).slice(0, room)
    this.d.store.write(() => {
      for (const { site } of chosen) this.enqueueCreate(site.id, 'backup')
    })
    this.d.jobs.kick()
    this.d.log.debug('queued daily backups', { sites: chosen.map((c) => c.site.slug), waiting: due.length - chosen.length })
    return chosen.length
  }

  /**
   * Removes every snapshot and backup of a site, rows and stored files. For the deletion reaper,
   * once the site is finally deleted (after its grace period). Idempotent.
   */
  removeAllFor(siteId: string): Promise<void> {
    return this.d.retention.removeAllFor(siteId)
  }

  /** Under the box's reserve no backup is queued (one would grow the archives); said once in the log each way. */
  private holdBackups(): boolean {
    const low = this.d.room?.isLow() ?? false
    if (low !== this.heldBack) {
      if (low) this.d.log.warn('the data folder is under its reserve of free space (disk.reserve_bytes, disk.reserve_percent): no backups are made until there is room again')
      else this.d.log.info('the data folder has room again: backups resume')
    }
    this.heldBack = low
    return low
  }

  private settleStranded(): void {
    for (const row of this.d.repo.stranded()) {
      const reason = `Berth stopped while processing this ${row.kind} (id ${row.id}); retry.`
      if (row.status === 'creating') this.d.repo.transition(row.id, ['creating'], { status: 'failed', error: reason, completedAt: this.d.clock.now() })
      else this.d.repo.transition(row.id, ['restoring'], { status: 'ready', error: `The last restore did not finish: ${reason}` })
      this.d.log.warn('settled an archive whose job had ended', { archive: row.id, was: row.status })
    }
  }

  /** Work files (named `{archive_id}.*`) of archives no job is working on: left by a crash. */
  private async clearWorkFiles(): Promise<void> {
    for (const name of await this.d.work.list()) {
      const row = this.d.repo.find(name.slice(0, 36))
      if (row?.status === 'creating' || row?.status === 'restoring') continue
      await this.d.work.remove(name)
    }
  }

  private enqueueCreate(siteId: string, kind: ArchiveKind): ArchiveRow {
    const id = crypto.randomUUID()
    return this.d.store.write(() => {
      const row = this.d.repo.insert({ id, siteId, kind, storageKey: `${siteId}/${id}.tar.zst`, createdAt: this.d.clock.now() })
      this.d.jobs.enqueue(CREATE_ARCHIVE_JOB, id)
      return row
    })
  }

  private requireSnapshots(site: SiteRow): void {
    const plan = this.d.plans.get(site.planSlug)
    if (plan.features.snapshots) return
    const withSnapshots = this.d.plans.list().filter((p) => p.features.snapshots).map((p) => p.slug)
    throw forbidden(
      say`Snapshots come with vps and dedicated plans (${withSnapshots.join(', ') || 'none on sale'}); site '${site.slug}' is on '${plan.slug}' (${plan.hosting_type}). Its daily backups are at ${op('listBackups', { tenant_slug: site.slug })}.`,
    )
  }

  private requireArchive(site: SiteRow, kind: ArchiveKind, id: string): ArchiveRow {
    const row = this.d.repo.findOf(site.id, kind, id)
    if (!row) throw notFound(say`No ${kind} ${id} on site '${site.slug}'; ${op(kind === 'snapshot' ? 'listSnapshots' : 'listBackups', { tenant_slug: site.slug })} lists them.`, PARAM[kind])
    return row
  }
}

/** The API's view of an archive; `offsite`: its copy is off the box. */
export function archiveView(row: ArchiveRow, offsite: boolean): ArchiveView {
  return {
    id: row.id,
    kind: row.kind as ArchiveView['kind'],
    status: row.status as ArchiveView['status'],
    size_bytes: row.sizeBytes,
    file_count: row.fileCount,
    created_at: iso(row.createdAt),
    completed_at: row.completedAt === null ? null : iso(row.completedAt),
    restored_at: row.restoredAt === null ? null : iso(row.restoredAt),
    error: row.error,
    copies: row.status === 'ready' || row.status === 'restoring' ? (offsite ? ['local', 'offsite'] : ['local']) : [],
  }
}
