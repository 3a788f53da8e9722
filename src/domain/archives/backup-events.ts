import type { ArchiveRow } from '../../store/schema'
import type { EventLog } from '../events'
import type { SiteRecords } from '../sites'
import type { ArchivesRepository } from './repository'
import { archiveView } from './service'

/**
 * `backup.completed` / `backup.failed`: a backup or snapshot that was being made turned ready or
 * failed, recorded in the transaction of that change (ArchivesRepository.onTransition). The
 * archives a deployment records are its own (its deployment's events tell of them). `data` is
 * the archive's view (`kind` says backup or snapshot).
 */
export class BackupEvents {
  constructor(private d: { events: Pick<EventLog, 'record'>; sites: Pick<SiteRecords, 'find'>; repo: Pick<ArchivesRepository, 'onTransition'> }) {}

  watch(): this {
    this.d.repo.onTransition((before, after) => this.changed(before, after))
    return this
  }

  changed(before: ArchiveRow, after: ArchiveRow): void {
    if (before.status !== 'creating' || (after.kind !== 'backup' && after.kind !== 'snapshot')) return
    if (after.status !== 'ready' && after.status !== 'failed') return
    const site = this.d.sites.find(after.siteId)
    if (!site) return
    this.d.events.record({ type: after.status === 'ready' ? 'backup.completed' : 'backup.failed', accountId: site.accountId, siteId: site.id, siteSlug: site.slug, data: archiveView(after, false) })
  }
}
