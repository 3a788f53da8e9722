import type { SiteEvent } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { SiteRecords } from '../sites'
import type { AppEnv } from './ports'

/** Tries after a start: the container's exec may not be ready at its first instant. */
const TRIES = 10
const SPACING_MS = 500

/**
 * The site's settings and secrets for PHP (PHP releases on the app image, and every site on the
 * vps image, berth/php): PHP-FPM clears its workers' environment, so each start of the container
 * and each change of the variables writes them into PHP-FPM's pool (drivers/runtime/php-env.ts)
 * and reloads it gracefully. At a start, a site without variables needs nothing (the file starts
 * empty).
 */
export class PhpEnvs {
  private pending = new Set<string>()

  constructor(private d: {
    sites: Pick<SiteRecords, 'find' | 'listLive'>
    /** Whether the site's container runs PHP-FPM (the app image, or its plan's image is berth/php). */
    runsPhp: (site: SiteRow) => boolean
    env: Pick<AppEnv, 'valuesOf'>
    /** Writes the pool file in the running container and reloads PHP-FPM; the names PHP cannot be given. */
    write: (slug: string, values: Record<string, string>) => Promise<{ left: string[] }>
    log: Logger
  }) {}

  onEvent(e: SiteEvent): void {
    if (e.action !== 'start') return
    const site = this.d.sites.find(e.siteId)
    if (!site || site.status !== 'active' || !this.d.runsPhp(site)) return
    if (Object.keys(this.d.env.valuesOf(site.id)).length === 0) return
    void this.startWrite(site)
  }

  /**
   * At Berth's start and after the engine's events were lost: every running site with PHP and
   * variables gets them again (its container may have started while Berth was away). A write
   * that finds the container stopped is skipped: its start will bring them.
   */
  async sweep(): Promise<void> {
    for (const site of this.d.sites.listLive()) {
      if (site.status !== 'active' || !this.d.runsPhp(site) || Object.keys(this.d.env.valuesOf(site.id)).length === 0) continue
      await this.write(site).catch((err) => this.d.log.debug('could not hand PHP a site\'s variables', { site: site.slug, error: (err as Error).message }))
    }
  }

  /** The site's variables changed: PHP gets them now (a listener of SiteEnvService.onChanged). */
  async changed(site: SiteRow): Promise<void> {
    if (site.status !== 'active' || !this.d.runsPhp(site)) return
    await this.write(site)
  }

  private async startWrite(site: SiteRow): Promise<void> {
    if (this.pending.has(site.id)) return
    this.pending.add(site.id)
    try {
      for (let i = 1; i <= TRIES; i++) {
        try {
          return await this.write(site)
        } catch (err) {
          if (i === TRIES) this.d.log.warn('could not hand PHP the site\'s variables after its start', { site: site.slug, error: (err as Error).message })
          else await Bun.sleep(SPACING_MS)
        }
      }
    } finally {
      this.pending.delete(site.id)
    }
  }

  private async write(site: SiteRow): Promise<void> {
    const { left } = await this.d.write(site.slug, this.d.env.valuesOf(site.id))
    if (left.length > 0) this.d.log.info('variables PHP-FPM cannot carry were left out of PHP\'s environment', { site: site.slug, names: left.join(',') })
  }
}
