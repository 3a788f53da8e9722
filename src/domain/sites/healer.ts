import type { SiteEvent } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import type { SitesRepository } from './repository'
import type { SiteRunner } from './runner'
import type { SiteEvents } from './site-events'

/**
 * A site that dies again within this long of being brought back is crash-looping: each repeat
 * waits longer. A death after a calm spell is healed at once.
 */
const CRASH_LOOP_MS = 5_000
const MAX_DELAY_MS = 30_000

export interface SiteHealerDeps {
  sites: Pick<SitesRepository, 'find'>
  /** `repair` leaves a site whose files are being restored alone (SiteRunner decides). */
  runner: Pick<SiteRunner, 'repair' | 'markDown' | 'markStarted' | 'isUp' | 'settled'>
  log: Logger
  /** Milliseconds since some fixed point; Date.now by default. */
  now?: () => number
  /** Records `site.down` when an active site's container dies, `site.up` once it is brought back (once per outage). */
  events?: Pick<SiteEvents, 'down' | 'up'>
}

/**
 * Brings an active site's container back as soon as the engine reports it gone (it died: killed,
 * stopped, out of memory, crashed; or it was removed), whoever did it, instead of at the next
 * reconcile pass. The
 * edge learns at once that the site is down (it answers "being brought back" without trying the
 * container) and the SiteRunner runs it again, on its volume, files intact. Sites that are not
 * `active` in the store (suspended, pending deletion, provisioning) are Berth's own stops and
 * stay down. A site that dies again within 5 s of coming back is retried after 0.5, 1, 2 ... 30 s,
 * not in a tight loop; the reconcile pass remains the safety net for what events do not cover.
 */
export class SiteHealer {
  private healing = new Set<string>()
  private again = new Set<string>()
  /** Per site: consecutive quick deaths, and when it was last brought back. */
  private repeats = new Map<string, { count: number; healedAt: number }>()
  private stopped = false
  /** Sites whose `site.down` was recorded and whose `site.up` was not yet. */
  private down = new Set<string>()

  constructor(private d: SiteHealerDeps) {}

  onEvent(e: SiteEvent): void {
    if (e.action === 'start') return this.d.runner.markStarted(e.slug, e.containerId)
    // The container is gone only once it died or was removed: a kill may not kill, an OOM may hit
    // a child process only, and `stop` follows the `die` it caused.
    if (e.action !== 'die' && e.action !== 'destroy') return
    if (!this.d.runner.markDown(e.slug, e.containerId)) return
    this.heal(e.siteId, e.slug, e.action)
  }

  /** Stops healing (shutdown): heals under way finish, none start. */
  stop(): void {
    this.stopped = true
  }

  private heal(siteId: string, slug: string, cause: string): void {
    if (this.stopped) return
    const site = this.d.sites.find(siteId)
    if (site?.status !== 'active' || site.slug !== slug) return
    // One heal per site at a time; events during it (die, stop, destroy of one kill) ask for one more look.
    if (this.healing.has(slug)) return void this.again.add(slug)
    this.healing.add(slug)
    const delay = this.delayFor(slug)
    void (async () => {
      if (delay > 0) await Bun.sleep(delay)
      // A run of Berth's own (a scale, a restore) may be what stopped it: let it finish first.
      await this.d.runner.settled(slug)
      if (this.d.runner.isUp(slug)) return this.cameBack(siteId, slug)
      const current = this.d.sites.find(siteId)
      if (current?.status !== 'active') return void this.down.delete(slug)
      if (this.stopped) return
      // Not a stop of Berth's own (those are settled above): the owner hears of it, once per outage.
      if (this.d.events && !this.down.has(slug)) {
        this.down.add(slug)
        this.d.events.down(current, cause === 'destroy' ? 'Its container was removed; it is being brought back.' : 'Its container stopped; it is being brought back.')
      }
      const started = performance.now()
      if (!(await this.d.runner.repair(current, { waitForAnswer: true }))) return
      this.cameBack(siteId, slug)
      this.repeats.set(slug, { count: this.repeats.get(slug)?.count ?? 0, healedAt: this.now() })
      this.d.log.info('brought a site back', { site: slug, cause, ms: Math.round(performance.now() - started) + delay })
    })()
      .catch((err) => this.d.log.warn('could not bring a site back; the reconcile pass will retry', { site: slug, cause, error: (err as Error).message }))
      .finally(() => {
        this.healing.delete(slug)
        if (this.again.delete(slug) && !this.d.runner.isUp(slug)) this.heal(siteId, slug, cause)
      })
  }

  /** A site whose `site.down` was recorded answers again: `site.up` (while it is still active). */
  private cameBack(siteId: string, slug: string): void {
    if (!this.down.delete(slug)) return
    const site = this.d.sites.find(siteId)
    if (site?.status === 'active') this.d.events?.up(site)
  }

  /** 0 unless the site died within CRASH_LOOP_MS of its last heal; then 0.5 s doubling to 30 s. */
  private delayFor(slug: string): number {
    const seen = this.repeats.get(slug)
    const count = seen && this.now() - seen.healedAt < CRASH_LOOP_MS ? seen.count + 1 : 0
    this.repeats.set(slug, { count, healedAt: seen?.healedAt ?? -Infinity })
    if (this.repeats.size > 10_000) this.repeats.clear()
    return count === 0 ? 0 : Math.min(MAX_DELAY_MS, 500 * 2 ** (count - 1))
  }

  private now(): number {
    return (this.d.now ?? Date.now)()
  }
}
