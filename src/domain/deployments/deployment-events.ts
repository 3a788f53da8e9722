import type { EventLog } from '../events'
import type { SiteRecords } from '../sites'
import type { DeploymentRow } from '../../store/schema'
import type { DeploymentsRepository } from './repository'
import { KEPT_RELEASES } from '../apps'
import { deploymentView } from './service'

/**
 * `deployment.succeeded` / `deployment.failed`, recorded in the transaction that finishes the
 * deployment (DeploymentsRepository.onFinished). `data` is the deployment's view without its
 * `output` (up to 64 KiB of the hook's output: GET /sites/{slug}/deployments/{id}/ has it).
 */
export class DeploymentEvents {
  constructor(private d: { events: Pick<EventLog, 'record'>; sites: Pick<SiteRecords, 'find'>; repo: Pick<DeploymentsRepository, 'releasesOf' | 'onFinished'> }) {}

  watch(): this {
    this.d.repo.onFinished((row) => this.finished(row))
    return this
  }

  finished(row: DeploymentRow): void {
    const site = this.d.sites.find(row.siteId)
    if (!site) return
    const { output: _output, ...view } = deploymentView(row, site.slug, new Set(this.d.repo.releasesOf(site.id, KEPT_RELEASES)))
    this.d.events.record({ type: row.status === 'succeeded' ? 'deployment.succeeded' : 'deployment.failed', accountId: site.accountId, siteId: site.id, siteSlug: site.slug, data: view })
  }
}
