import type { AppRuntime } from '../../core/enums'
import type { Clock } from '../../lib/clock'
import type { SiteRow } from '../../store/schema'
import type { SiteRecords, SiteRunner } from '../sites'
import type { AppSites } from './ports'

/**
 * The sites area's records as the apps area needs them: an app site's runtime and live release in
 * the store, and its first move to the app image (SiteRunner.spec picks the image from
 * sites.runtime; the run recreates the container on it, files kept).
 */
export class AppSiteRecords implements AppSites {
  constructor(private d: {
    sites: Pick<SiteRecords, 'find' | 'setApp'>
    runner: Pick<SiteRunner, 'run'>
    /** What the deployment built (deployments.runtime, deployments.commit). */
    setBuilt: (deploymentId: string, built: { runtime: AppRuntime; commit: string | null }) => void
    clock: Clock
  }) {}

  find(siteId: string): SiteRow | undefined {
    return this.d.sites.find(siteId)
  }

  async useAppImage(site: SiteRow): Promise<SiteRow> {
    const row = this.d.sites.setApp(site.id, { runtime: site.runtime ?? 'static' }, this.d.clock.now())
    await this.d.runner.run(row, { waitForAnswer: true })
    return row
  }

  setLive(siteId: string, deploymentId: string, runtime: AppRuntime, commit: string | null): void {
    this.d.sites.setApp(siteId, { runtime, live: deploymentId }, this.d.clock.now())
    this.d.setBuilt(deploymentId, { runtime, commit })
  }
}
