import type { ArchiveStore } from '../../drivers/archives/types'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import { type ArchiveEvents, type ArchiveRecords, type ArchiveRetention, type HomeTarballs, type RestoreGuard, workFile, type WorkFolder } from '../archives'
import { noRoomFor, type SiteRecords, type SiteRunner } from '../sites'
import type { DeploymentsRepository } from './repository'

/**
 * Names at the root of the home that a deployment's record leaves out and a rollback keeps as
 * they are, besides `logs/` (which no archive holds): `.ssh/` is who may log in, not what the site
 * serves, so a rollback never brings back a key removed since nor drops one added since.
 */
export const NOT_RECORDED = ['.ssh'] as const

/** A rollback whose files cannot be put back (gone, or a restore of the site is running). */
export class RollbackRefusedError extends Error {}

export interface DeploymentFilesDeps {
  archives: Pick<ArchiveRecords, 'insert' | 'find' | 'transition' | 'listOf' | 'restoringOf'>
  deployments: Pick<DeploymentsRepository, 'setArchive' | 'keepArchivesOfNewest'>
  retention: Pick<ArchiveRetention, 'discard'>
  /** The archive store, as snapshots and backups use it. */
  files: ArchiveStore
  runtime: Pick<ContainerRuntime, 'homePath' | 'withSitePaused' | 'siteDisk'>
  /** Keeps the files API's changes out of a rollback's swap, as out of a restore's. */
  restores: Pick<RestoreGuard, 'drained'>
  /** Restarts a site whose web server holds the swapped folders (restartSite). */
  runner: Pick<SiteRunner, 'run' | 'stop'>
  sites: Pick<SiteRecords, 'find'>
  tar: HomeTarballs
  work: WorkFolder
  clock: Clock
  log: Logger
  /** Told when a record turned ready (its copy off the box is queued, as for backups). */
  events?: Pick<ArchiveEvents, 'ready'>
  /** config `archives.deployments_kept`: the newest deployments of a site that keep their files; 0: none recorded. */
  kept: number
}

/**
 * What a deployment put in place, and putting it back (a rollback). Each deployment records the
 * site's home (but `logs/` and NOT_RECORDED) as an archive of kind `deployment`, made as a
 * snapshot is (the site frozen while tar copies, compression and storage after the thaw) and
 * kept in the archive store; its id is `deployments.archive_id`. A rollback's deployment names
 * the same archive: it puts those files back. Only the newest `kept` deployments of a site keep
 * theirs (`prune`). Called by the deploy job, which runs one deployment of a site at a time, so
 * nothing else works on a site's deployment archives meanwhile.
 */
export class DeploymentFiles {
  constructor(private d: DeploymentFilesDeps) {}

  get recording(): boolean {
    return this.d.kept > 0
  }

  /** Records the home's files for the deployment; returns what was recorded. Throws when it could not (nothing is left behind). */
  async record(site: SiteRow, deploymentId: string): Promise<{ archiveId: string; files: number; bytes: number; storedBytes: number; frozenMs: number; ms: number }> {
    const id = crypto.randomUUID()
    const row = this.d.archives.insert({ id, siteId: site.id, kind: 'deployment', storageKey: `${site.id}/${id}.tar.zst`, createdAt: this.d.clock.now() })
    const [tarName, zstName] = [workFile(id, 'tar'), workFile(id, 'tar.zst')]
    const [tarFile, zstFile] = [this.d.work.path(tarName), this.d.work.path(zstName)]
    const started = performance.now()
    try {
      await this.d.work.prepare()
      const home = await this.d.runtime.homePath(site.slug)
      const frozenAt = performance.now()
      await this.d.runtime.withSitePaused(site.slug, () => this.d.tar.tarHome(home, tarFile, NOT_RECORDED))
      const frozenMs = Math.round(performance.now() - frozenAt)
      const counts = await this.d.tar.scanTar(tarFile)
      await this.d.tar.compressFile(tarFile, zstFile)
      const { sizeBytes } = await this.d.files.put(row.storageKey!, zstFile)
      if (!this.d.archives.transition(id, ['creating'], { status: 'ready', sizeBytes, fileCount: counts.files, completedAt: this.d.clock.now(), error: null })) {
        throw new Error('the record was removed while it was made')
      }
      this.d.deployments.setArchive(deploymentId, id)
      this.d.events?.ready(this.d.archives.find(id)!)
      return { archiveId: id, files: counts.files, bytes: counts.bytes, storedBytes: sizeBytes, frozenMs, ms: Math.round(performance.now() - started) }
    } catch (err) {
      await this.d.retention.discard(row, ['creating', 'ready']).catch(() => {})
      throw err
    } finally {
      await this.d.work.remove(tarName, zstName)
    }
  }

  /**
   * Puts the files of the archive back in the home (but `logs/` and NOT_RECORDED), swapped with
   * the site frozen, as a restore does; the container is not restarted (the deploy's reload
   * follows). While it runs the archive is `restoring`, so the files API refuses changes.
   * RollbackRefusedError when the archive is gone or another restore of the site runs.
   */
  async putBack(site: SiteRow, archiveId: string): Promise<{ ms: number; frozenMs: number }> {
    const busy = this.d.archives.restoringOf(site.id)
    if (busy) throw new RollbackRefusedError(`A restore of this site (${busy.kind} ${busy.id}) is running; roll back again once it is done.`)
    if (!this.d.archives.transition(archiveId, ['ready'], { status: 'restoring' })) {
      throw new RollbackRefusedError('The files of that deployment are no longer kept; roll back to a newer deployment.')
    }
    const row = this.d.archives.find(archiveId)!
    const [zstName, tarName] = [workFile(archiveId, 'restore.tar.zst'), workFile(archiveId, 'restore.tar')]
    const [zstFile, tarFile] = [this.d.work.path(zstName), this.d.work.path(tarName)]
    const started = performance.now()
    try {
      await this.d.work.prepare()
      await this.d.files.get(row.storageKey!, zstFile)
      await this.d.tar.decompressFile(zstFile, tarFile)
      await this.d.work.remove(zstName)
      const noRoom = noRoomFor(site.slug, await this.d.runtime.siteDisk(site.slug).catch(() => null), await this.d.work.size(tarName), 'putting back the files of that deployment')
      if (noRoom) throw new RollbackRefusedError(noRoom)
      const home = await this.d.runtime.homePath(site.slug)
      await this.d.restores.drained(site.id)
      const frozenAt = performance.now()
      await this.d.runtime.withSitePaused(site.slug, () => this.d.tar.replaceHome(home, tarFile, NOT_RECORDED))
      const done = performance.now()
      return { ms: Math.round(done - started), frozenMs: Math.round(done - frozenAt) }
    } finally {
      this.d.archives.transition(archiveId, ['restoring'], { status: 'ready', restoredAt: this.d.clock.now() })
      await this.d.work.remove(zstName, tarName)
    }
  }

  /**
   * Restarts the site's container and waits until it answers, for a web server that holds the
   * folders a swap replaced (the static image's busybox httpd serves from its working folder,
   * the `public/` moved aside). Started again only while the site is active (else the reconciler
   * decides).
   */
  async restartSite(site: SiteRow): Promise<void> {
    await this.d.runner.stop(site.slug)
    const current = this.d.sites.find(site.id)
    if (current?.status === 'active') await this.d.runner.run(current, { waitForAnswer: true })
  }

  /**
   * A rollback cut short by a stop of Berth left its archive `restoring`: ready again (the home
   * may be half swapped; rolling back again completes it, as replaceHome resumes).
   */
  settle(archiveId: string): void {
    this.d.archives.transition(archiveId, ['restoring'], { status: 'ready' })
  }

  /**
   * Keeps the files of the site's newest `kept` deployments and removes the archives no
   * deployment names any more (older ones, records a crash cut short). Returns how many went.
   */
  async prune(siteId: string): Promise<number> {
    const named = this.d.deployments.keepArchivesOfNewest(siteId, this.d.kept)
    let removed = 0
    for (const row of this.d.archives.listOf(siteId, 'deployment')) {
      if (named.has(row.id)) continue
      if (await this.d.retention.discard(row, ['creating', 'ready', 'restoring', 'failed'])) removed++
    }
    if (removed > 0) this.d.log.info('pruned the files of old deployments', { site_id: siteId, removed, kept: this.d.kept })
    return removed
  }
}
