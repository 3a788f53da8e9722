import type { AppRuntime } from '../../core/enums'
import type { SiteEvent } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { SiteRecords } from '../sites'
import type { AppEnv, AppSupervisor } from './ports'

/** Tries of a push after a start: the container's exec may not be ready at its first instant. */
const TRIES = 10
const SPACING_MS = 500

/**
 * Hands an app site's container its settings and secrets each time it starts (issue 39): they
 * live only in the container's /tmp (a tmpfs), never on a disk, so a container started by
 * anyone (Berth's run, the engine's restart policy, a box's reboot) gets them from Berth, and its
 * supervisor starts the release's processes only then. At Berth's start and after the engine's
 * events were lost, every running app site whose supervisor has none is sent them (`sweep`).
 *
 * At each start the store also follows the release the container's home holds (`~/app/current`,
 * as its supervisor reads it): a restore of a snapshot or backup, or a copy brought back by
 * `berth restore`, puts back the release that was live then, and the site view says so.
 */
export class AppStarts {
  private pending = new Set<string>()

  constructor(private d: { sites: Pick<SiteRecords, 'find' | 'listLive' | 'setWebPort'>; supervisor: AppSupervisor; env: AppEnv; log: Logger; live?: AppLiveRecords }) {}

  onEvent(e: SiteEvent): void {
    if (e.action !== 'start') return
    const site = this.d.sites.find(e.siteId)
    if (!site || site.runtime === null) return
    void this.push(site)
  }

  /** Every live app site's supervisor that has no settings yet gets them. */
  async sweep(): Promise<void> {
    for (const site of this.d.sites.listLive()) {
      if (site.runtime === null || site.status !== 'active') continue
      const status = await this.d.supervisor.status(site.slug).catch(() => null)
      if (status && !status.env) await this.push(site)
      // A switch whose answer Berth did not live to store: the edge follows the web's port.
      else if (status && status.port !== undefined && status.port !== site.webPort) this.d.sites.setWebPort(site.slug, status.port)
    }
  }

  private async push(site: SiteRow): Promise<void> {
    if (this.pending.has(site.id)) return
    this.pending.add(site.id)
    try {
      for (let i = 1; i <= TRIES; i++) {
        try {
          await this.follow(site)
          await this.d.supervisor.pushEnv(site.slug, this.d.env.valuesOf(site.id))
          return
        } catch (err) {
          if (i === TRIES) this.d.log.warn('could not hand an app its settings after its start', { site: site.slug, error: (err as Error).message })
          else await Bun.sleep(SPACING_MS)
        }
      }
    } finally {
      this.pending.delete(site.id)
    }
  }

  /**
   * The store's live release set to the one the started container serves when it is one of the
   * site's builds, or to none when its home holds no release (restored from before the first).
   */
  private async follow(site: SiteRow): Promise<void> {
    if (!this.d.live || site.runtime === null) return
    const status = await this.d.supervisor.status(site.slug)
    if (!status) throw new Error('the supervisor does not answer yet')
    const release = status.release
    if (release === site.liveDeploymentId) return
    if (release !== null) {
      const built = this.d.live.find(site.id, release)
      if (!built?.runtime || built.status !== 'succeeded') return
      this.d.live.set(site.id, release, built.runtime)
    } else {
      this.d.live.set(site.id, null, site.runtime)
    }
    this.d.log.info('app site serves another release after its start (a restore)', { site: site.slug, release: release ?? 'none', was: site.liveDeploymentId ?? undefined })
  }
}

/** The store's side of an app site's live release, for `AppStarts` to follow the container. */
export interface AppLiveRecords {
  /** The site's deployment `deploymentId` (its status, what it built), if it is the site's. */
  find(siteId: string, deploymentId: string): { runtime: AppRuntime | null; status: string } | undefined
  set(siteId: string, deploymentId: string | null, runtime: AppRuntime): void
}
