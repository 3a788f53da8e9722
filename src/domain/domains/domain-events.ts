import type { DomainRow } from '../../store/schema'
import type { EventLog } from '../events'
import type { SiteRecords } from '../sites'

/**
 * The domains' events (docs/api.md, "Event types"): `domain.registered` when a registration
 * turns the domain active, `domain.renewal_failed` when an automatic renewal fails (it is tried
 * again a day later). Called inside the write of the change; `data` is the domain's view.
 */
export class DomainEvents {
  constructor(private d: { events: Pick<EventLog, 'record'>; view: { view(domain: DomainRow): object }; sites: Pick<SiteRecords, 'find'> }) {}

  record(type: 'domain.registered' | 'domain.renewal_failed', domain: DomainRow): void {
    const site = domain.siteId ? this.d.sites.find(domain.siteId) : undefined
    this.d.events.record({ type, accountId: domain.accountId, siteId: site?.id ?? null, siteSlug: site?.slug ?? null, data: { ...this.d.view.view(domain) } })
  }
}
