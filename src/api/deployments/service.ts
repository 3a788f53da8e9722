import { iso, type Clock } from '../../lib/clock'
import type { JobRunner } from '../../jobs/runner'
import type { DeploymentRow } from '../../store/schema'
import type { Store } from '../../store/store'
import { NotFoundError } from '../http/errors'
import type { Principal } from '../keys/service'
import type { SitesService } from '../sites/service'
import type { Deployment, DeploymentStatus } from './model'
import type { DeploymentsRepository } from './repository'

export const DEPLOY_JOB = 'deploy_site'
/** Finished deployments kept per site, and listed. */
export const KEPT_DEPLOYMENTS = 20

/**
 * POST /sites/{slug}/deploy/ and the deployment list. A deploy answers at once with the record
 * `queued`; the deploy job (deployer.ts) reloads the web server and runs the site's hook.
 */
export class DeploymentsService {
  constructor(
    private store: Store,
    private clock: Clock,
    private repo: DeploymentsRepository,
    private sites: SitesService,
    private jobs: JobRunner,
  ) {}

  /**
   * Queues a deployment of the site (409 unless it is active). While one is still queued, that
   * one is returned instead of a second: it has not started, so it will deploy the files as they
   * are when it runs. One that is running is followed by the new one.
   */
  trigger(p: Principal, slug: string): Deployment {
    const site = this.sites.requireChangeable(p, slug)
    const row = this.store.write(() => {
      const queued = this.repo.findQueued(site.id)
      if (queued) return queued
      const created = this.repo.insert({ id: crypto.randomUUID(), siteId: site.id, createdAt: this.clock.now() })
      this.jobs.enqueue(DEPLOY_JOB, created.id)
      this.repo.prune(site.id, KEPT_DEPLOYMENTS)
      return created
    })
    this.jobs.kick()
    return view(row, site.slug)
  }

  /** The site's deployments, newest first (the last KEPT_DEPLOYMENTS). */
  list(p: Principal, slug: string): Deployment[] {
    const site = this.sites.requireOwned(p, slug)
    return this.repo.listForSite(site.id, KEPT_DEPLOYMENTS).map((d) => view(d, site.slug))
  }

  get(p: Principal, slug: string, id: string): Deployment {
    const site = this.sites.requireOwned(p, slug)
    const row = this.repo.findForSite(site.id, id)
    if (!row) throw new NotFoundError(`No deployment ${id} of site '${slug}'; GET /sites/${slug}/deployments/ lists them.`, 'deployment_id')
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
