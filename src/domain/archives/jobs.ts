import type { ArchiveStore } from '../../drivers/archives/types'
import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { JobHandler } from '../../jobs/runner'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { ArchiveRow, SiteRow } from '../../store/schema'
import { noRoomFor, type SiteChanges, type SiteRecords, type SiteRunner } from '../sites'
import type { ArchivesRepository } from './repository'
import type { HomeTarballs, WorkFolder } from './tarballs'
import type { RestoreGuard } from './restore-guard'
import type { ArchiveRetention } from './retention'
import type { ArchiveEvents } from './events'
import type { ArchiveDumps } from './dumps'

export const CREATE_ARCHIVE_JOB = 'create_archive'
export const RESTORE_ARCHIVE_JOB = 'restore_archive'

export interface ArchiveJobDeps {
  repo: ArchivesRepository
  retention: ArchiveRetention
  /** Keeps the files API's changes out of a restore's swap. */
  restores: Pick<RestoreGuard, 'drained'>
  files: ArchiveStore
  /** The site's files and freezes (homePath, withSitePaused); its container goes through `runner`. */
  runtime: Pick<ContainerRuntime, 'homePath' | 'prepareSite' | 'withSitePaused' | 'siteDisk'>
  runner: Pick<SiteRunner, 'run' | 'stop' | 'spec'>
  sites: Pick<SiteRecords, 'find'>
  /** config `archives.backups_kept`. */
  backupsKept: number
  clock: Clock
  log: Logger
  /** Tarballs of a site's home, made and put back (drivers/archives/home-tar.ts). */
  tar: HomeTarballs
  /** The local folder for the uncompressed and compressed tarballs on their way (mode 0700). */
  work: WorkFolder
  /** Told when a restore replaced a site's files. */
  changes?: Pick<SiteChanges, 'changed'>
  /** Told when an archive turned ready (its copy off the box is queued). */
  events?: Pick<ArchiveEvents, 'ready'>
  /** The site's databases' dumps, taken with its files and put back with them (issue 40). */
  dumps?: Pick<ArchiveDumps, 'add' | 'take' | 'restore' | 'clear'>
}

/**
 * The job that makes a snapshot or backup (subject: the archive id). The home is written to an
 * uncompressed tar while the site is frozen (`withSitePaused`), so the archive is one moment of
 * the site even while it writes; compression, counting and storing happen after the thaw.
 * The site's databases are dumped in the same freeze, right after the tar, and appended to it
 * under `.berth-databases/` (ArchiveDumps): the app writes nothing meanwhile, so its files and
 * its data are of one moment. A dump failing (or Berth stopping mid-way) never leaves a ready
 * archive: the archive is stored whole, dumps included, or the job fails.
 * Idempotent: a run after a crash starts over and overwrites its own work files and key.
 */
export class CreateArchiveJob implements JobHandler {
  attempts = 3

  constructor(private d: ArchiveJobDeps) {}

  async run(id: string): Promise<void> {
    const row = this.d.repo.find(id)
    if (!row || row.status !== 'creating') return
    const site = this.d.sites.find(row.siteId)
    if (!site || site.status === 'deleted' || site.status === 'failed') {
      this.d.repo.transition(id, ['creating'], { status: 'failed', error: 'The site no longer has files to archive.', completedAt: this.d.clock.now() })
      return
    }
    const [tarName, zstName] = [workFile(id, 'tar'), workFile(id, 'tar.zst')]
    const [tarFile, zstFile] = [this.d.work.path(tarName), this.d.work.path(zstName)]
    await this.d.work.prepare()
    try {
      const home = await this.d.runtime.homePath(site.slug)
      const started = performance.now()
      let dumped = { databases: 0, bytes: 0 }
      let tarredMs = 0
      await this.d.runtime.withSitePaused(site.slug, async () => {
        await this.d.tar.tarHome(home, tarFile)
        tarredMs = Math.round(performance.now() - started)
        if (this.d.dumps) dumped = await this.d.dumps.add(site, id, tarFile)
      })
      const frozenMs = Math.round(performance.now() - started)
      const counts = await this.d.tar.scanTar(tarFile)
      await this.d.tar.compressFile(tarFile, zstFile)
      await this.d.work.remove(tarName)
      const compressedAt = performance.now()
      const { sizeBytes } = await this.d.files.put(row.storageKey!, zstFile)
      const storeMs = Math.round(performance.now() - compressedAt)
      const ready = this.d.repo.transition(id, ['creating'], { status: 'ready', sizeBytes, fileCount: counts.files, completedAt: this.d.clock.now(), error: null })
      if (!ready) {
        // Deleted meanwhile (the site's archives removed by the reaper): drop what was made.
        await this.d.files.delete(row.storageKey!)
        return
      }
      this.d.events?.ready(this.d.repo.find(id)!)
      this.d.log.info('archive ready', { site: site.slug, archive: id, kind: row.kind, files: counts.files, bytes: counts.bytes, stored_bytes: sizeBytes, databases: dumped.databases, dump_bytes: dumped.bytes, frozen_ms: frozenMs, dump_ms: frozenMs - tarredMs, compress_ms: Math.round(compressedAt - started) - frozenMs, store_ms: storeMs, ms: Math.round(performance.now() - started) })
      if (row.kind === 'backup') await this.d.retention.pruneBackups(site.id, this.d.backupsKept)
    } finally {
      await this.d.work.remove(tarName, zstName)
      await this.d.dumps?.clear(id)
    }
  }

  async failed(id: string): Promise<void> {
    const row = this.d.repo.find(id)
    if (!row) return
    this.d.repo.transition(id, ['creating'], { status: 'failed', error: publicReason(row), completedAt: this.d.clock.now() })
    if (row.storageKey) await this.d.files.delete(row.storageKey)
  }
}

/**
 * The job that puts an archive back on its site (subject: the archive id, in status
 * `restoring`). The archive is fetched and decompressed while the site still serves. Then the
 * home's files are replaced (`replaceHome`) with the site frozen, not merely stopped: the runtime
 * holds the site for the whole freeze, so no process of the site (and no reconcile pass starting
 * it again) runs while tar writes there as root. Last the container is restarted, so no process
 * keeps state from the old files, and waited for: `ready` with a new `restored_at` means the site
 * serves the restored files. Visitors' requests wait during the freeze, then meet the edge's 503
 * page during the restart (~1 s; on a cluster the container is stopped on its node and Swarm
 * replaces it, as after a crash, instead of a scale to 0 and back: docs/cluster.md "Restarts"). The files API writes from the host, which no freeze stops: it refuses
 * changes while the archive is `restoring`, and the swap waits for those it began before
 * (RestoreGuard). Idempotent: a run after a crash starts over (replaceHome resumes safely).
 */
export class RestoreArchiveJob implements JobHandler {
  attempts = 2

  constructor(private d: ArchiveJobDeps) {}

  async run(id: string): Promise<void> {
    const row = this.d.repo.find(id)
    if (!row || row.status !== 'restoring') return
    const site = this.d.sites.find(row.siteId)
    if (!site || site.status === 'deleted') {
      this.d.repo.transition(id, ['restoring'], { status: 'ready', error: 'The site no longer exists.' })
      return
    }
    const [zstName, tarName] = [workFile(id, 'restore.tar.zst'), workFile(id, 'restore.tar')]
    const [zstFile, tarFile] = [this.d.work.path(zstName), this.d.work.path(tarName)]
    await this.d.work.prepare()
    try {
      const started = performance.now()
      await this.d.files.get(row.storageKey!, zstFile)
      await this.d.tar.decompressFile(zstFile, tarFile)
      await this.d.work.remove(zstName)
      // Its databases' dumps come out of the tar first: what is left is the home's files alone.
      const dumps = (await this.d.dumps?.take(id, tarFile)) ?? null
      // The site's volume where it is placed, made when missing: a move killed between its switch
      // to the new node and the volume's creation there left none, and the restore fills it.
      await this.d.runtime.prepareSite(this.d.runner.spec(site))
      // The extraction fills a staging folder beside the files it replaces, on the site's disk
      // (its plan's disk_gb): refused before anything changes when it cannot fit.
      const noRoom = noRoomFor(site.slug, await this.d.runtime.siteDisk(site.slug).catch(() => null), await this.d.work.size(tarName), `restoring ${row.kind} ${id}`)
      if (noRoom) {
        this.d.repo.transition(id, ['restoring'], { status: 'ready', error: `The last restore failed; ${noRoom}` })
        this.d.log.warn('restore refused: the site disk has no room for it', { site: site.slug, archive: id })
        return
      }
      const home = await this.d.runtime.homePath(site.slug)
      await this.d.restores.drained(site.id)
      const downAt = performance.now()
      await this.d.runtime.withSitePaused(site.slug, () => this.d.tar.replaceHome(home, tarFile))
      const extractedAt = performance.now()
      // Stopped to be run again at once (a cluster's node leaves the service as it is: its restart is that of a crash, ~1 s).
      await this.d.runner.stop(site.slug, { forRestart: this.d.sites.find(site.id)?.status === 'active' })
      // The databases' data, while the app does not run: it starts on files and data of one moment.
      const databases = (await this.d.dumps?.restore(site, id, dumps)) ?? 0
      const restoredAt = performance.now()
      await this.startAgain(site)
      this.d.repo.transition(id, ['restoring'], { status: 'ready', restoredAt: this.d.clock.now(), error: null })
      this.d.changes?.changed({ siteId: site.id, slug: site.slug, reason: 'restore' })
      const done = performance.now()
      this.d.log.info('archive restored', { site: site.slug, archive: id, kind: row.kind, fetch_ms: Math.round(downAt - started), frozen_ms: Math.round(extractedAt - downAt), databases, databases_ms: Math.round(restoredAt - extractedAt), restart_ms: Math.round(done - extractedAt), down_ms: Math.round(done - downAt), ms: Math.round(done - started) })
    } finally {
      await this.d.work.remove(tarName, zstName)
      await this.d.dumps?.clear(id)
    }
  }

  async failed(id: string): Promise<void> {
    const row = this.d.repo.find(id)
    if (!row) return
    this.d.repo.transition(id, ['restoring'], { status: 'ready', error: `The last restore failed; ${publicReason(row)}` })
    const site = this.d.sites.find(row.siteId)
    if (site) await this.startAgain(site).catch((err) => this.d.log.error('could not start a site after a failed restore', { site: site.slug, error: (err as Error).message }))
  }

  /** Runs the site again when it should run (the reconciler would, within its interval). */
  private async startAgain(site: SiteRow): Promise<void> {
    const current = this.d.sites.find(site.id)
    if (current?.status !== 'active') return
    await this.d.runner.run(current, { waitForAnswer: true })
  }
}

/** The name of a job's file on the way: named by archive id, so a rerun reuses them. */
export const workFile = (id: string, ext: string) => `${id}.${ext}`

/**
 * What an agent may read about a failure: never a host path or an engine message. The job
 * runner logs the full error with the archive id as the job's subject.
 */
function publicReason(row: ArchiveRow): string {
  const what = row.kind === 'snapshot' ? 'snapshot' : 'backup'
  return `Berth could not process this ${what} (id ${row.id}); retry, and quote the id to the hoster if it fails again.`
}
