import type { Clock } from '../../lib/clock'
import type { SiteRow } from '../../store/schema'
import type { SiteAppView } from '../sites'
import type { AppSupervisor } from './ports'

/** How long one site's process states are reused (an exec into its container each time). */
export const APP_STATUS_CACHE_MS = 2_000

/**
 * What an app site runs, as the site view shows it (issue 39): its runtime and live release from
 * the store, its processes from the supervisor (berth-supervise status), reused for 2 s.
 */
export class AppViews {
  private cache = new Map<string, { at: number; processes: SiteAppView['processes'] }>()

  constructor(private d: {
    supervisor: Pick<AppSupervisor, 'status'>
    clock: Clock
    /** Whether the site's plan gives it SSH: an app site with SSH takes git push (AppPushes). */
    hasSsh: (site: SiteRow) => boolean
  }) {}

  /**
   * null for a site that never moved to the app image. `runtime` is the live release's: null while
   * none serves (the site took enableGitPush and was never deployed, or a restore put back a home
   * from before its first release), rather than the placeholder the store keeps for the image.
   */
  async view(site: SiteRow): Promise<SiteAppView | null> {
    if (site.runtime === null) return null
    const runtime = site.liveDeploymentId !== null ? site.runtime : null
    return { runtime, release: site.liveDeploymentId, git_push: this.d.hasSsh(site), processes: await this.processes(site.slug) }
  }

  private async processes(slug: string): Promise<SiteAppView['processes']> {
    const now = this.d.clock.now()
    const hit = this.cache.get(slug)
    if (hit && now - hit.at < APP_STATUS_CACHE_MS) return hit.processes
    const status = await this.d.supervisor.status(slug).catch(() => null)
    const processes = status ? status.processes.map((p) => ({ name: p.name, state: p.state, restarts: p.restarts, last_exit_code: p.last_exit_code, since: p.since })) : null
    if (this.cache.size > 10_000) this.cache.clear()
    this.cache.set(slug, { at: now, processes })
    return processes
  }
}
