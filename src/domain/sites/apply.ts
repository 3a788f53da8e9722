import type { JobHandler } from '../../jobs/runner'
import type { Logger } from '../../lib/logger'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'

/**
 * Jobs that bring an active site's container in line with its record after a change the API
 * has answered already (subject: the site id): `scale` (the plan's limits, or a new image) and
 * `restore` (a deletion canceled: the container runs again). Both run the same convergence; the
 * kinds tell the site's `applying` field what is under way.
 */
export const APPLY_JOBS = { scale: 'apply_scale', restore: 'apply_restore' } as const
export type ApplyKind = keyof typeof APPLY_JOBS

export class ApplySiteJob implements JobHandler {
  attempts = 3

  constructor(private d: { sites: Pick<SitesRepository, 'find'>; runner: Pick<SiteRunner, 'run'>; log: Logger }) {}

  /** Nothing to do for a site no longer active: the reconcile pass keeps stopped sites stopped. */
  async run(siteId: string): Promise<void> {
    const site = this.d.sites.find(siteId)
    if (site?.status !== 'active') return
    await this.d.runner.run(site, { waitForAnswer: true })
  }

  async failed(siteId: string, error: string): Promise<void> {
    this.d.log.warn('a site change is recorded but its container is not in line yet; the reconcile pass will retry', { site_id: siteId, error })
  }
}
