import type { Config } from '../config/config'
import { HostPortTakenError, type ContainerRuntime } from '../drivers/runtime/types'
import type { JobRunner } from '../jobs/runner'
import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { PlansService } from '../api/plans/service'
import type { SiteEndpoints } from '../api/sites/endpoints'
import { siteSpec } from '../api/sites/provisioning'
import type { SitesRepository } from '../api/sites/repository'
import type { SiteReaper } from '../api/sites/reaper'

export interface ReconcileReport {
  /** Slugs of sites removed for good because their deletion grace period ended. */
  reaped: string[]
  ensured: number
  stopped: number
  quarantined: string[]
  errors: string[]
}

/**
 * Makes Docker match the store (design.md, Durability and recovery), on start and every 30 s:
 * active sites run (a container removed behind Berth's back comes back on its volume, files
 * intact); suspended and pending-deletion sites are stopped; containers labelled as this
 * instance's that the store does not know are reported and stopped, never deleted. Each pass
 * first runs the deletion reaper, so a site past its grace period is removed, not stopped.
 */
export class Reconciler {
  private running: Promise<ReconcileReport> | null = null

  constructor(
    private sites: SitesRepository,
    private plans: PlansService,
    private runtime: ContainerRuntime,
    private endpoints: SiteEndpoints,
    private jobs: JobRunner,
    private config: Config,
    private clock: Clock,
    private log: Logger,
    private reaper: SiteReaper,
  ) {}

  /** One pass; concurrent calls share the pass in flight. */
  reconcile(): Promise<ReconcileReport> {
    this.running ??= this.pass().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async pass(): Promise<ReconcileReport> {
    const report: ReconcileReport = { reaped: [], ensured: 0, stopped: 0, quarantined: [], errors: [] }
    const reaped = await this.reaper.reap()
    report.reaped = reaped.reaped
    report.errors.push(...reaped.errors)
    // A plan change or a wider ssh.port_range may have left an SSH site without its port.
    try {
      this.sites.assignSshPorts()
    } catch (err) {
      report.errors.push((err as Error).message)
    }
    const active = this.sites.listWithStatus(['active'])
    await Promise.all(active.map(async (site) => {
      try {
        this.endpoints.set(site.slug, await this.runtime.ensureSite(siteSpec(site, this.plans, this.config)))
        report.ensured++
      } catch (err) {
        if (err instanceof HostPortTakenError) this.sites.replaceSshPort(site.id, err.port)
        report.errors.push(`${site.slug}: ${(err as Error).message}`)
      }
    }))
    for (const site of this.sites.listWithStatus(['suspended', 'pending_deletion'])) {
      // Read again just before the stop: a restore may have made the site active meanwhile.
      const status = this.sites.find(site.id)?.status
      if (status !== 'suspended' && status !== 'pending_deletion') continue
      try {
        await this.runtime.stopSite(site.slug)
        this.endpoints.delete(site.slug)
        report.stopped++
      } catch (err) {
        report.errors.push(`${site.slug}: ${(err as Error).message}`)
      }
    }
    const known = new Map(this.sites.listWithStatus(['provisioning', 'active', 'suspended', 'pending_deletion']).map((s) => [s.id, s]))
    for (const container of await this.runtime.listManaged()) {
      const site = known.get(container.siteId)
      if (site && site.slug === container.slug) continue
      if (container.running) {
        await this.runtime.quarantine(container.containerId)
        this.log.warn('stopped a container labelled as ours that the store does not know', { container: container.name, site_id: container.siteId })
      }
      report.quarantined.push(container.name)
    }
    if (report.errors.length > 0) this.log.error('reconcile could not repair every site', { errors: report.errors })
    this.jobs.kick()
    return report
  }
}
