import type { JobHandler } from '../../jobs/runner'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'

export const PROVISION_JOB = 'provision_site'

export interface ProvisionerDeps {
  sites: Pick<SitesRepository, 'find' | 'setStatus'>
  runner: Pick<SiteRunner, 'run' | 'remove'>
  clock: Clock
  log: Logger
  /** Called once when the last attempt failed: refunds the buyer (BillingService.refundPurchaseOf). */
  onFailed: (site: SiteRow, error: string) => Promise<void>
}

/**
 * The provisioning job (subject: the site id): runs the site's container and marks the site
 * active once its web server answers. Idempotent (the runner reuses what exists), so a crash
 * mid-way is repaired by running it again. When the last attempt fails, the site is `failed`,
 * its container and files removed and the buyer refunded.
 */
export class Provisioner implements JobHandler {
  attempts = 3

  constructor(private d: ProvisionerDeps) {}

  async run(siteId: string): Promise<void> {
    const site = this.d.sites.find(siteId)
    if (!site || site.status !== 'provisioning') return
    const started = this.d.clock.now()
    await this.d.runner.run(site, { waitForAnswer: true })
    this.d.sites.setStatus(site.id, 'active', this.d.clock.now())
    this.d.log.info('site provisioned', { site: site.slug, ms: this.d.clock.now() - started })
  }

  async failed(siteId: string, error: string): Promise<void> {
    const site = this.d.sites.find(siteId)
    if (!site) return
    this.d.sites.setStatus(site.id, 'failed', this.d.clock.now(), `Provisioning failed: ${error}`)
    await this.d.runner.remove(site.slug, { volume: true }).catch(() => {})
    await this.d.onFailed(site, error)
  }
}
