import type { EventLog, EventType } from '../events'
import type { SiteRow } from '../../store/schema'
import type { SitesRepository } from './repository'
import type { SiteView } from './views'

/** The part of the event log an area records with (domain/events). */
export type EventRecorder = Pick<EventLog, 'record'>

/**
 * The event a change of a site's stored status tells of, if any (docs/api.md, "Event types"):
 * provisioning to active or failed, to suspended (not back from pending_deletion: a restore),
 * suspended to active (resumed), to deleted (the end of the grace period, when the site is
 * removed). Other moves (to pending_deletion and back) have no event of their own.
 */
export function siteEventOf(before: Pick<SiteRow, 'status'>, after: Pick<SiteRow, 'status'>): EventType | null {
  if (before.status === after.status) return null
  if (after.status === 'active') return before.status === 'provisioning' ? 'site.active' : before.status === 'suspended' ? 'site.resumed' : null
  if (after.status === 'failed') return before.status === 'provisioning' ? 'site.provisioning_failed' : null
  // Back from pending deletion to the suspension it had (a restore) is not a new suspension.
  if (after.status === 'suspended') return before.status === 'pending_deletion' ? null : 'site.suspended'
  if (after.status === 'deleted') return 'site.deleted'
  return null
}

/**
 * Records the sites' events: each status change in its own transaction (the repository's
 * `onStatusChange`), and the healer's `site.down` / `site.up` (a container that died while the
 * site was active, and its return). `data` is the site's view, as GET /sites/{slug}/ lists it
 * (no usage figures, no secrets).
 */
export class SiteEvents {
  constructor(private d: { events: EventRecorder; view: (site: SiteRow) => SiteView }) {}

  /** Records from now on every status change `sites` makes. */
  watch(sites: Pick<SitesRepository, 'onStatusChange'>): this {
    sites.onStatusChange((before, after) => this.changed(before, after))
    return this
  }

  changed(before: SiteRow, after: SiteRow): void {
    const type = siteEventOf(before, after)
    if (type) this.record(type, after)
  }

  /** The site stopped serving without Berth stopping it (`reason` says how); `site.up` follows once it answers again. */
  down(site: SiteRow, reason: string): void {
    this.record('site.down', site, { reason })
  }

  up(site: SiteRow): void {
    this.record('site.up', site)
  }

  /** `down` and `up` by slug, for an active site only (a suspended or deleted one is Berth's own stop). */
  bySlug(sites: Pick<SitesRepository, 'findLiveBySlug'>): { down(slug: string, reason: string): void; up(slug: string): void; active(slug: string): boolean } {
    const active = (slug: string) => {
      const site = sites.findLiveBySlug(slug)
      return site?.status === 'active' ? site : undefined
    }
    return {
      down: (slug, reason) => {
        const site = active(slug)
        if (site) this.down(site, reason)
      },
      up: (slug) => {
        const site = active(slug)
        if (site) this.up(site)
      },
      active: (slug) => active(slug) !== undefined,
    }
  }

  private record(type: EventType, site: SiteRow, extra: Record<string, unknown> = {}): void {
    this.d.events.record({ type, accountId: site.accountId, siteId: site.id, siteSlug: site.slug, data: { ...this.d.view(site), ...extra } })
  }
}
