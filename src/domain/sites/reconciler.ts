import type { ContainerRuntime } from '../../drivers/runtime/types'
import type { JobRunner } from '../../jobs/runner'
import type { Logger } from '../../lib/logger'
import { SAY_AFTER_FAILURES, type RepairBackoff } from './repair-backoff'
import type { SiteReaper } from './reaper'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'

export interface ReconcilerDeps {
  sites: SitesRepository
  /** `repair` leaves a site whose files are being restored alone (SiteRunner decides). */
  runner: Pick<SiteRunner, 'repair' | 'stop'>
  /** For the containers the store does not know (listManaged, quarantine): not any one site's. */
  runtime: Pick<ContainerRuntime, 'listManaged' | 'quarantine'>
  jobs: Pick<JobRunner, 'kick'>
  reaper: Pick<SiteReaper, 'reap'>
  log: Logger
  /**
   * The sites whose start failed, per node (repair-backoff.ts): a site is not tried again before
   * its wait is over, so a node that keeps rejecting it is not asked at every pass. Absent: every pass tries every site.
   */
  backoff?: RepairBackoff
  /** The node a site is placed on, to know which one failed it (Placement.nodeOf); absent: one box, `control`. */
  nodeOf?: (slug: string) => Promise<string | null>
  /** Epoch milliseconds (the backoff's clock); Date.now by default. */
  now?: () => number
  /** What else runs for the sites (their databases, issue 40: domain/databases DatabaseLife): brought in line after the sites; returns its errors. */
  companions?: { reconcile(): Promise<string[]> }
}

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

  constructor(private d: ReconcilerDeps) {}

  /** One pass; concurrent calls share the pass in flight. */
  reconcile(): Promise<ReconcileReport> {
    this.running ??= this.pass().finally(() => {
      this.running = null
    })
    return this.running
  }

  private async pass(): Promise<ReconcileReport> {
    const report: ReconcileReport = { reaped: [], ensured: 0, stopped: 0, quarantined: [], errors: [] }
    const reaped = await this.d.reaper.reap()
    report.reaped = reaped.reaped
    report.errors.push(...reaped.errors)
    // A plan change or a wider ssh.port_range may have left an SSH site without its port.
    try {
      this.d.sites.assignSshPorts()
    } catch (err) {
      report.errors.push((err as Error).message)
    }
    const now = (this.d.now ?? Date.now)()
    const active = this.d.sites.listWithStatus(['active']).filter((site) => this.d.backoff?.due(site.slug, now) ?? true)
    await Promise.all(active.map(async (site) => {
      try {
        if (!(await this.d.runner.repair(site))) return
        this.d.backoff?.succeeded(site.slug)
        report.ensured++
      } catch (err) {
        report.errors.push(`${site.slug}: ${(err as Error).message}`)
        await this.failed(site.slug, err as Error)
      }
    }))
    try {
      report.errors.push(...((await this.d.companions?.reconcile()) ?? []))
    } catch (err) {
      report.errors.push(`databases: ${(err as Error).message}`)
    }
    for (const site of this.d.sites.listWithStatus(['suspended', 'pending_deletion'])) {
      // Read again just before the stop: a restore may have made the site active meanwhile.
      const status = this.d.sites.find(site.id)?.status
      if (status !== 'suspended' && status !== 'pending_deletion') continue
      try {
        await this.d.runner.stop(site.slug)
        report.stopped++
      } catch (err) {
        report.errors.push(`${site.slug}: ${(err as Error).message}`)
      }
    }
    const known = new Map(this.d.sites.listWithStatus(['provisioning', 'active', 'suspended', 'pending_deletion']).map((s) => [s.id, s]))
    for (const container of await this.d.runtime.listManaged()) {
      const site = known.get(container.siteId)
      if (site && site.slug === container.slug) continue
      if (container.running) {
        await this.d.runtime.quarantine(container.containerId)
        this.d.log.warn('stopped a container labelled as ours that the store does not know', { container: container.name, site_id: container.siteId })
      }
      report.quarantined.push(container.name)
    }
    if (report.errors.length > 0) this.d.log.error('reconcile could not repair every site', { errors: report.errors })
    this.d.jobs.kick()
    return report
  }

  /** Counts a failed start against the site's node; from the third in a row the hoster is told once, and the site's view says it. */
  private async failed(slug: string, err: Error): Promise<void> {
    if (!this.d.backoff) return
    const node = (await this.d.nodeOf?.(slug).catch(() => null)) ?? 'control'
    const f = this.d.backoff.failed(slug, node, (this.d.now ?? Date.now)())
    if (f.count >= SAY_AFTER_FAILURES) {
      this.d.log.error('a site could not be started on its node again: tried less often from now on (berth sites move SLUG --to NODE puts it elsewhere)', {
        site: slug, node, failures: f.count, next_try: new Date(f.nextAt).toISOString(), error: err.message,
      })
    }
  }
}
