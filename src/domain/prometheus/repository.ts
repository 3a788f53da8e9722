import { and, count, eq, isNotNull, ne } from 'drizzle-orm'
import { certificates, jobs, payments, sites, subscriptions } from '../../store/schema'
import type { Store } from '../../store/store'

/** What a scrape reads of the store: a handful of aggregate queries, each on an index or a small table. */
export interface StoreGauges {
  /** Live sites (not deleted): their slug and status, for `berth_site_up` and `berth_sites`. */
  sites: { id: string; slug: string; status: string }[]
  /** Jobs by status (queued, running, succeeded, failed). */
  jobs: { status: string; n: number }[]
  /** Certificates Berth holds: the first name each is for, and its expiry (epoch ms). */
  certificates: { subject: string; names: string; notAfter: number }[]
  subscriptions: { status: string; n: number }[]
  /** Renewal charges the processor declined, ever. */
  renewalChargesFailed: number
}

/** The store's side of /metrics (src/domain/prometheus/scrape.ts). */
export class PrometheusRepository {
  constructor(private store: Store) {}

  read(): StoreGauges {
    const db = this.store.db
    return {
      sites: db.select({ id: sites.id, slug: sites.slug, status: sites.status }).from(sites).where(ne(sites.status, 'deleted')).all(),
      jobs: db.select({ status: jobs.status, n: count() }).from(jobs).groupBy(jobs.status).all(),
      certificates: db.select({ subject: certificates.subject, names: certificates.names, notAfter: certificates.notAfter }).from(certificates)
        .where(isNotNull(certificates.notAfter)).all().map((c) => ({ ...c, notAfter: c.notAfter! })),
      subscriptions: db.select({ status: subscriptions.status, n: count() }).from(subscriptions).groupBy(subscriptions.status).all(),
      renewalChargesFailed: db.select({ n: count() }).from(payments).where(and(eq(payments.kind, 'renewal'), eq(payments.status, 'failed'))).get()!.n,
    }
  }
}
