import { DiskTooSmallError, type ContainerRuntime } from '../../drivers/runtime/types'
import type { JobHandler } from '../../jobs/runner'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { PlansService } from '../plans'
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

  constructor(private d: {
    sites: Pick<SitesRepository, 'find'>
    runner: Pick<SiteRunner, 'run' | 'holding'>
    log: Logger
    /** The site's disk follows its plan's disk_gb (issue 38); absent: containers only. */
    disks?: { runtime: Pick<ContainerRuntime, 'siteDisk' | 'resizeSiteDisk'>; plans: Pick<PlansService, 'get'> }
  }) {}

  /** Nothing to do for a site no longer active: the reconcile pass keeps stopped sites stopped. */
  async run(siteId: string): Promise<void> {
    const site = this.d.sites.find(siteId)
    if (site?.status !== 'active') return
    // Held as a run of the site: a smaller disk (or a host that cannot grow one online) stops the
    // container for the resize, and the healer must not start it again meanwhile; `run` does.
    await this.d.runner.holding(site.slug, async () => {
      // The container runs again whatever the resize did (an offline one stopped it); a resize
      // that failed fails the job after that, and its retry tries again.
      const resized = await this.resizeDisk(site).then(() => null, (err: unknown) => err)
      await this.d.runner.run(site, { waitForAnswer: true })
      if (resized) throw resized
    })
  }

  /**
   * The site's disk brought to its plan's disk_gb when it differs: a bigger one online, a smaller
   * one with the container stopped for a few seconds (the runtime's resizeSiteDisk). The scale
   * refused a plan smaller than the files (409 DISK_TOO_SMALL); files written since that make a
   * shrink impossible leave the site on its bigger disk (logged for the hoster), never lose one.
   */
  private async resizeDisk(site: SiteRow): Promise<void> {
    if (!this.d.disks) return
    const { runtime, plans } = this.d.disks
    const diskGb = plans.get(site.planSlug).features.disk_gb
    const disk = await runtime.siteDisk(site.slug)
    // Its usable size is within a percent or two of the disk_gb it was made with (ext4's own records), so the nearest whole GiB.
    if (!disk || Math.round(disk.limitBytes / 1024 ** 3) === diskGb) return
    try {
      await runtime.resizeSiteDisk({ siteId: site.id, slug: site.slug, diskGb })
    } catch (err) {
      if (!(err instanceof DiskTooSmallError)) throw err
      this.d.log.warn('site disk kept bigger than its plan: its files grew past the new size after the scale', { site: site.slug, used_bytes: err.usedBytes, wanted_bytes: err.wantedBytes })
      return
    }
    // Checked, not assumed: a disk that did not take its new size fails the job (retried, logged).
    const after = await runtime.siteDisk(site.slug)
    if (after && Math.round(after.limitBytes / 1024 ** 3) !== diskGb) {
      throw new Error(`the disk of site '${site.slug}' holds ${after.limitBytes} bytes after its resize to ${diskGb} GB`)
    }
    this.d.log.info('site disk resized', { site: site.slug, from_bytes: disk.limitBytes, to_bytes: after?.limitBytes ?? null, disk_gb: diskGb })
  }

  async failed(siteId: string, error: string): Promise<void> {
    this.d.log.warn('a site change is recorded but its container is not in line yet; the reconcile pass will retry', { site_id: siteId, error })
  }
}
