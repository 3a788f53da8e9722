import type { ArchiveStore } from '../../drivers/archives/types'
import type { Logger } from '../../lib/logger'
import type { ArchiveRow } from '../../store/schema'
import type { ArchiveEvents } from './events'
import type { ArchivesRepository } from './repository'

/**
 * Removing archives: one on request, old backups past the number kept, and every archive of a
 * site that is finally deleted. Crash-safe in two steps: the row is marked `deleted` (hidden from
 * the API at once), the file deleted, then the row; a crash between them leaves a `deleted` row
 * that `finishDeletions` (each maintenance pass) completes.
 */
export class ArchiveRetention {
  /** `events` is told of each archive removed (its copy off the box goes too). */
  constructor(private repo: ArchivesRepository, private files: ArchiveStore, private log: Logger, private events?: Pick<ArchiveEvents, 'discarded'>) {}

  /** Removes one archive (row and file). False when it was not in one of `from`. */
  async discard(row: ArchiveRow, from: ArchiveRow['status'][]): Promise<boolean> {
    if (!this.repo.transition(row.id, from as never, { status: 'deleted' })) return false
    await this.purge(row)
    return true
  }

  /**
   * Keeps the newest `keep` ready backups of the site and removes the older ones, with failed
   * backups older than the oldest one kept (newer failures stay listed: they say why a day is
   * missing).
   */
  async pruneBackups(siteId: string, keep: number): Promise<number> {
    const backups = this.repo.listOf(siteId, 'backup')
    const ready = backups.filter((b) => b.status === 'ready')
    if (ready.length <= keep) return 0
    const oldestKept = ready[keep - 1]
    const drop = [...ready.slice(keep), ...backups.filter((b) => b.status === 'failed' && b.createdAt < oldestKept.createdAt)]
    let removed = 0
    for (const row of drop) if (await this.discard(row, [row.status as 'ready' | 'failed'])) removed++
    if (removed > 0) this.log.info('pruned old backups', { site_id: siteId, removed, kept: keep })
    return removed
  }

  /**
   * Every snapshot and backup of the site, rows and files, including any file the store holds
   * under the site's folder that no row names. For the deletion reaper, once a site is finally
   * deleted; a job still making an archive of it finds its row gone and deletes what it made.
   * Idempotent.
   */
  async removeAllFor(siteId: string): Promise<void> {
    const rows = this.repo.allOf(siteId)
    for (const row of rows) this.repo.transition(row.id, ['creating', 'ready', 'restoring', 'failed'], { status: 'deleted' })
    for (const row of rows) await this.purge(row)
    for (const key of await this.files.list(`${siteId}/`)) await this.files.delete(key)
    if (rows.length > 0) this.log.info('removed the archives of a deleted site', { site_id: siteId, archives: rows.length })
  }

  /** Completes removals a crash interrupted. */
  async finishDeletions(): Promise<void> {
    for (const row of this.repo.withStatus(['deleted'])) await this.purge(row)
  }

  private async purge(row: ArchiveRow): Promise<void> {
    this.events?.discarded(row)
    if (row.storageKey) await this.files.delete(row.storageKey)
    this.repo.remove(row.id)
  }
}
