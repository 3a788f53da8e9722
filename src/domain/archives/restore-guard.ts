import type { SiteRow } from '../../store/schema'
import { conflict, op, say } from '../errors'
import type { ArchivesRepository } from './repository'

/**
 * Keeps the files API's changes and a restore of the same site apart. A restore swaps the whole
 * home while the site is frozen, but the files API writes from the host, where no freeze stops
 * it: a write landing in the swap would be lost, or would leave a file of neither version.
 *
 * - A change (write, upload, mkdir, delete) calls `beginChange` first: it answers conflict while one
 *   of the site's archives is `restoring` (from the moment the restore is accepted until it is
 *   done or has failed), and otherwise counts the change until it ends.
 * - The restore job, before the swap, waits (`drained`) for the changes counted before its
 *   archive turned `restoring`. None can start after: the check and the count are one
 *   synchronous step, and the archive turned `restoring` before the job was queued.
 *
 * Refusing rather than queueing: a restore takes seconds (fetch, unpack, swap, restart), longer
 * than a request should hang, and the archive's status tells the caller when to retry. Counts
 * live in this process, which is the one that serves the API and runs the jobs.
 */
export class RestoreGuard {
  private changes = new Map<string, { running: number; idle: (() => void)[] }>()

  constructor(private repo: ArchivesRepository) {}

  /**
   * conflict while a restore of `site` runs; otherwise counts a change of its files and
   * returns the function that ends it (call it once, when the change has finished or failed).
   */
  beginChange(site: Pick<SiteRow, 'id' | 'slug'>): () => void {
    const restoring = this.repo.restoringOf(site.id)
    if (restoring) {
      if (restoring.kind === 'deployment') {
        throw conflict(say`A rollback of site '${site.slug}' is putting back the files of an earlier deployment; retry when ${op('listDeployments', { tenant_slug: site.slug })} shows it finished.`)
      }
      const poll = restoring.kind === 'snapshot' ? op('getSnapshot', { tenant_slug: site.slug, snapshot_id: restoring.id }) : op('getBackup', { tenant_slug: site.slug, backup_id: restoring.id })
      throw conflict(say`A restore of site '${site.slug}' from ${restoring.kind} ${restoring.id} is running; retry when ${poll} shows ready.`)
    }
    const entry = this.changes.get(site.id) ?? { running: 0, idle: [] }
    entry.running++
    this.changes.set(site.id, entry)
    let ended = false
    return () => {
      if (ended) return
      ended = true
      if (--entry.running > 0) return
      this.changes.delete(site.id)
      for (const wake of entry.idle) wake()
    }
  }

  /** Resolves once no change counted for the site is running (at once when none is). */
  drained(siteId: string): Promise<void> {
    const entry = this.changes.get(siteId)
    if (!entry) return Promise.resolve()
    return new Promise((done) => entry.idle.push(done))
  }
}
