import { ne, eq, sum } from 'drizzle-orm'
import { plans, sites } from '../../store/schema'
import type { Store } from '../../store/store'

/** The store's side of the box's room: what the plans of the existing sites promise. */
export class RoomRepository {
  constructor(private store: Store) {}

  /** The sum of the plans' `disk_gb` over the sites not deleted (provisioning, suspended and pending deletion count: each holds its disk). */
  sitesDiskGb(): number {
    const row = this.store.db.select({ gb: sum(plans.diskGb) }).from(sites).innerJoin(plans, eq(plans.slug, sites.planSlug)).where(ne(sites.status, 'deleted')).get()
    return Number(row?.gb ?? 0)
  }
}
