import { iso, type Clock } from '../../lib/clock'
import type { JobRunner } from '../../jobs/runner'
import type { DeploymentRow, SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { notFound, op, say } from '../errors'
import type { DeploymentStatus } from '../../core/enums'
import type { Deployment } from './views'
import type { DeploymentsRepository } from './repository'

export const DEPLOY_JOB = 'deploy_site'
/** Finished deployments kept per site, and listed. */
export const KEPT_DEPLOYMENTS = 20

/**
 * deploySite and the deployment list. A deploy answers at once with the record
 * `queued`; the deploy job (deployer.ts) reloads the web server and runs the site's hook.
 */
export class DeploymentsService {
  constructor(private d: { store: Store; clock: Clock; repo: DeploymentsRepository; jobs: Pick<JobRunner, 'enqueue' | 'kick'> }) {}

  /**
   * Queues a deployment of the site (conflict unless it is active). While one is still queued, that
   * one is returned instead of a second: it has not started, so it will deploy the files as they
   * are when it runs. One that is running is followed by the new one.
   */
  trigger(site: SiteRow): Deployment {
    const row = this.d.store.write(() => {
      const queued = this.d.repo.findQueued(site.id)
      if (queued) return queued
      const created = this.d.repo.insert({ id: crypto.randomUUID(), siteId: site.id, createdAt: this.d.clock.now() })
      this.d.jobs.enqueue(DEPLOY_JOB, created.id)
      this.d.repo.prune(site.id, KEPT_DEPLOYMENTS)
      return created
    })
    this.d.jobs.kick()
    return view(row, site.slug)
  }

  /** The site's deployments, newest first (the last KEPT_DEPLOYMENTS). */
  list(site: SiteRow): Deployment[] {
    return this.d.repo.listForSite(site.id, KEPT_DEPLOYMENTS).map((d) => view(d, site.slug))
  }

  get(site: SiteRow, id: string): Deployment {
    const slug = site.slug
    const row = this.d.repo.findForSite(site.id, id)
    if (!row) throw notFound(say`No deployment ${id} of site '${slug}'; ${op('listDeployments', { tenant_slug: slug })} lists them.`, 'deployment_id')
    return view(row, site.slug)
  }
}

function view(d: DeploymentRow, slug: string): Deployment {
  return {
    id: d.id,
    site_slug: slug,
    status: d.status as DeploymentStatus,
    created_at: iso(d.createdAt),
    started_at: d.startedAt === null ? null : iso(d.startedAt),
    finished_at: d.finishedAt === null ? null : iso(d.finishedAt),
    output: d.output,
    error: d.error,
  }
}
