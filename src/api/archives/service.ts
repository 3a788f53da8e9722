import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Config } from '../../config/config'
import type { JobRunner } from '../../jobs/runner'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { ArchiveRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { ConflictError, ForbiddenError, NotFoundError } from '../http/errors'
import type { Principal } from '../keys/service'
import type { PlansService } from '../plans/service'
import type { SitesRepository } from '../sites/repository'
import type { SitesService } from '../sites/service'
import { CREATE_ARCHIVE_JOB, RESTORE_ARCHIVE_JOB } from './jobs'
import type { ArchiveView } from './model'
import type { ArchiveKind, ArchivesRepository } from './repository'
import type { ArchiveRetention } from './retention'

/**
 * Backups made at once, over all sites. They share the job runner with provisioning; a wave of
 * due backups (the first start of an upgraded installation, say) must not make a purchase wait
 * behind hundreds of them. At one maintenance pass per 30 s that is up to 11,520 backups a day.
 */
const MAX_BACKUPS_IN_FLIGHT = 4
/** A failed backup is tried again after this long (or the backup interval, when shorter). */
const FAILED_BACKUP_RETRY_MS = 60 * 60 * 1000

const PARAM: Record<ArchiveKind, string> = { snapshot: 'snapshot_id', backup: 'backup_id' }

/**
 * Snapshots (on request, vps and dedicated plans) and the automatic daily backups (every plan) of
 * sites' files, as design.md's "Sites" describes; decisions in docs/api.md. Making and restoring
 * an archive are jobs (./jobs.ts); this answers the API, schedules backups and removes archives.
 */
export class ArchivesService {
  constructor(
    private store: Store,
    private clock: Clock,
    private repo: ArchivesRepository,
    private retention: ArchiveRetention,
    private sites: SitesService,
    private sitesRepo: SitesRepository,
    private plans: PlansService,
    private jobs: JobRunner,
    private config: Config,
    private workDir: string,
    private log: Logger,
  ) {}

  /** The site's snapshots or backups, newest first. Listing works on every plan. */
  list(p: Principal, slug: string, kind: ArchiveKind): ArchiveView[] {
    const site = this.sites.requireOwned(p, slug)
    return this.repo.listOf(site.id, kind).map(archiveView)
  }

  get(p: Principal, slug: string, kind: ArchiveKind, id: string): ArchiveView {
    return archiveView(this.requireArchive(this.sites.requireOwned(p, slug), kind, id))
  }

  /**
   * POST /sites/{slug}/snapshot/: records a snapshot in `creating` and queues the job that makes
   * it. 403 on a plan without snapshots; 409 when the site holds `snapshots_per_site` already.
   */
  createSnapshot(p: Principal, slug: string): ArchiveView {
    const row = this.store.write(() => {
      const site = this.sites.requireChangeable(p, slug)
      this.requireSnapshots(site)
      const max = this.config.archives.snapshotsPerSite
      if (this.repo.countWithStatus(site.id, 'snapshot', ['creating', 'ready', 'restoring']) >= max) {
        throw new ConflictError(`Site '${slug}' has ${max} snapshots, the most a site keeps; delete one first (DELETE /sites/${slug}/snapshots/{snapshot_id}/).`)
      }
      return this.enqueueCreate(site.id, 'snapshot')
    })
    this.jobs.kick()
    return archiveView(row)
  }

  /**
   * Starts putting a ready archive back on its site; answers the archive in `restoring`, `ready`
   * again with a new `restored_at` once the site serves the restored files. 409 when the archive
   * is not ready or another restore of the site is running.
   */
  restore(p: Principal, slug: string, kind: ArchiveKind, id: string): ArchiveView {
    const row = this.store.write(() => {
      const site = this.sites.requireChangeable(p, slug)
      if (kind === 'snapshot') this.requireSnapshots(site)
      const archive = this.requireArchive(site, kind, id)
      if (archive.status !== 'ready') {
        throw new ConflictError(`This ${kind} is ${archive.status}, not ready; ${archive.status === 'creating' ? 'wait until it is ready' : archive.status === 'restoring' ? 'it is being restored now' : 'restore another one'}.`, PARAM[kind])
      }
      if (this.repo.countWithStatus(site.id, 'snapshot', ['restoring']) + this.repo.countWithStatus(site.id, 'backup', ['restoring']) > 0) {
        throw new ConflictError(`Another restore of site '${slug}' is running; wait until it is done (its archive turns ready again).`)
      }
      this.repo.transition(id, ['ready'], { status: 'restoring' })
      this.jobs.enqueue(RESTORE_ARCHIVE_JOB, id)
      return this.repo.find(id)!
    })
    this.jobs.kick()
    return archiveView(row)
  }

  /** DELETE /sites/{slug}/snapshots/{id}/: the row and the stored file go at once. */
  async deleteSnapshot(p: Principal, slug: string, id: string): Promise<{ id: string; deleted: true }> {
    const site = this.sites.requireChangeable(p, slug)
    const archive = this.requireArchive(site, 'snapshot', id)
    const busy = () => new ConflictError(`This snapshot is ${archive.status}; delete it once that is done.`, 'snapshot_id')
    if (archive.status !== 'ready' && archive.status !== 'failed') throw busy()
    if (!(await this.retention.discard(archive, ['ready', 'failed']))) throw busy()
    this.log.info('snapshot deleted', { site: slug, archive: id })
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
      await this.retention.finishDeletions()
      await this.clearWorkFiles()
    } catch (err) {
      this.log.error('archive upkeep failed', { error: (err as Error).message })
    }
  }

  /**
   * Queues a backup for each active site that is due, oldest-backed-up first, at most
   * MAX_BACKUPS_IN_FLIGHT at once. Due: no backup yet (so the first comes at the first pass after
   * the site turns active), or the newest is older than `backup_interval_seconds`; after a
   * failed one, an hour later (or the interval, when shorter). Returns how many were queued.
   */
  scheduleBackups(): number {
    const now = this.clock.now()
    const interval = this.config.archives.backupIntervalSeconds * 1000
    const retry = Math.min(interval, FAILED_BACKUP_RETRY_MS)
    const room = MAX_BACKUPS_IN_FLIGHT - this.repo.countAll('backup', ['creating'])
    if (room <= 0) return 0
    const newest = new Map<string, { made?: number; failed?: number; creating: boolean }>()
    for (const { siteId, status, newest: at } of this.repo.newestBackups()) {
      const entry = newest.get(siteId) ?? { creating: false }
      if (status === 'creating') entry.creating = true
      else if (status === 'failed') entry.failed = at
      else entry.made = Math.max(entry.made ?? -Infinity, at)
      newest.set(siteId, entry)
    }
    const due: { site: SiteRow; since: number }[] = []
    for (const site of this.sitesRepo.listWithStatus(['active'])) {
      const last = newest.get(site.id)
      if (last?.creating) continue
      if (last?.made !== undefined && now - last.made < interval) continue
      if (last?.failed !== undefined && last.failed > (last.made ?? -Infinity) && now - last.failed < retry) continue
      due.push({ site, since: last?.made ?? -Infinity })
    }
    if (due.length === 0) return 0
    const chosen = due.sort((a, b) => a.since - b.since).slice(0, room)
    this.store.write(() => {
      for (const { site } of chosen) this.enqueueCreate(site.id, 'backup')
    })
    this.jobs.kick()
    this.log.debug('queued daily backups', { sites: chosen.map((c) => c.site.slug), waiting: due.length - chosen.length })
    return chosen.length
  }

  /**
   * Removes every snapshot and backup of a site, rows and stored files. For the deletion reaper,
   * once the site is finally deleted (after its grace period). Idempotent.
   */
  removeAllFor(siteId: string): Promise<void> {
    return this.retention.removeAllFor(siteId)
  }

  private settleStranded(): void {
    for (const row of this.repo.stranded()) {
      const reason = `Berth stopped while processing this ${row.kind} (id ${row.id}); retry.`
      if (row.status === 'creating') this.repo.transition(row.id, ['creating'], { status: 'failed', error: reason, completedAt: this.clock.now() })
      else this.repo.transition(row.id, ['restoring'], { status: 'ready', error: `The last restore did not finish: ${reason}` })
      this.log.warn('settled an archive whose job had ended', { archive: row.id, was: row.status })
    }
  }

  /** Work files (named `{archive_id}.*`) of archives no job is working on: left by a crash. */
  private async clearWorkFiles(): Promise<void> {
    const names = await readdir(this.workDir).catch(() => [] as string[])
    for (const name of names) {
      const row = this.repo.find(name.slice(0, 36))
      if (row?.status === 'creating' || row?.status === 'restoring') continue
      await rm(join(this.workDir, name), { force: true })
    }
  }

  private enqueueCreate(siteId: string, kind: ArchiveKind): ArchiveRow {
    const id = crypto.randomUUID()
    return this.store.write(() => {
      const row = this.repo.insert({ id, siteId, kind, storageKey: `${siteId}/${id}.tar.zst`, createdAt: this.clock.now() })
      this.jobs.enqueue(CREATE_ARCHIVE_JOB, id)
      return row
    })
  }

  private requireSnapshots(site: SiteRow): void {
    const plan = this.plans.get(site.planSlug)
    if (plan.features.snapshots) return
    const withSnapshots = this.plans.list().filter((p) => p.features.snapshots).map((p) => p.slug)
    throw new ForbiddenError(
      `Snapshots come with vps and dedicated plans (${withSnapshots.join(', ') || 'none on sale'}); site '${site.slug}' is on '${plan.slug}' (${plan.hosting_type}). Its daily backups are at GET /sites/${site.slug}/backups/.`,
    )
  }

  private requireArchive(site: SiteRow, kind: ArchiveKind, id: string): ArchiveRow {
    const row = this.repo.findOf(site.id, kind, id)
    if (!row) throw new NotFoundError(`No ${kind} ${id} on site '${site.slug}'; GET /sites/${site.slug}/${kind}s/ lists them.`, PARAM[kind])
    return row
  }
}

export function archiveView(row: ArchiveRow): ArchiveView {
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
  }
}
