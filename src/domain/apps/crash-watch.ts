import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { EventLog } from '../events'
import type { AppProcessState, AppSupervisor } from './ports'

/** How often the app sites' supervisors are asked (berth serve; docs/api.md "Event types"). */
export const CRASH_WATCH_INTERVAL_MS = 15_000

type ProcessView = Pick<AppProcessState, 'name' | 'state' | 'restarts' | 'last_exit_code' | 'since'>

/**
 * Tells the owner when a process of an app site enters its crash loop (`app.crashing`: it exited
 * 3 times within a minute) and when it runs again (`app.recovered`), by asking each active app
 * site's supervisor every CRASH_WATCH_INTERVAL_MS. A crash-looping `web` also makes the site
 * `site.down` (its visitors get errors), and its return `site.up`, in the same transaction. What
 * was seen is kept in memory: after a restart of Berth a process still crashing is told of again.
 */
export class AppCrashWatch {
  /** Per site id: the names of its processes last seen crashing. */
  private crashing = new Map<string, Set<string>>()
  private running = false

  constructor(private d: {
    store: Pick<Store, 'write'>
    sites: { listWithStatus(statuses: ['active']): SiteRow[] }
    supervisor: Pick<AppSupervisor, 'status'>
    events: Pick<EventLog, 'record'>
    /** The site's `site.down` / `site.up` (domain/sites SiteEvents). */
    site: { down(site: SiteRow, reason: string): void; up(site: SiteRow): void }
    log: Logger
  }) {}

  /** One round over the active app sites; overlapping calls return at once. Never throws. */
  async tick(): Promise<void> {
    if (this.running) return
    this.running = true
    try {
      const sites = this.d.sites.listWithStatus(['active']).filter((s) => s.runtime !== null)
      const live = new Set(sites.map((s) => s.id))
      for (const id of this.crashing.keys()) if (!live.has(id)) this.crashing.delete(id)
      for (const site of sites) {
        const report = await this.d.supervisor.status(site.slug).catch(() => null)
        if (report) this.seen(site, report.processes)
      }
    } catch (err) {
      this.d.log.warn('could not look at the app sites\' processes; the next round will', { error: (err as Error).message })
    } finally {
      this.running = false
    }
  }

  /** Compares what the supervisor reports with what was seen last and records what changed. */
  seen(site: SiteRow, processes: ProcessView[]): void {
    const before = this.crashing.get(site.id) ?? new Set<string>()
    const entered = processes.filter((p) => p.state === 'crashing' && !before.has(p.name))
    const recovered = processes.filter((p) => before.has(p.name) && p.state === 'running')
    // Still in its loop until it runs (a restart in between is `starting` or `backoff`); one that
    // left the release or stopped is no longer watched, without an event.
    const next = new Set(processes.filter((p) => p.state === 'crashing' || (before.has(p.name) && p.state !== 'running' && p.state !== 'stopped')).map((p) => p.name))
    if (entered.length > 0 || recovered.length > 0) this.tell(site, processes, entered, recovered)
    // Kept once told (a write that failed is told again on the next round).
    if (next.size > 0) this.crashing.set(site.id, next)
    else this.crashing.delete(site.id)
  }

  private tell(site: SiteRow, processes: ProcessView[], entered: ProcessView[], recovered: ProcessView[]): void {
    const all = processes.map(view)
    this.d.store.write(() => {
      for (const p of entered) {
        this.record('app.crashing', site, { process: view(p), processes: all })
        if (p.name === 'web') this.d.site.down(site, `Its web process keeps exiting (exit code ${p.last_exit_code ?? 'unknown'}); see logs?type=app.`)
      }
      for (const p of recovered) {
        this.record('app.recovered', site, { process: view(p), processes: all })
        if (p.name === 'web') this.d.site.up(site)
      }
    })
  }

  private record(type: 'app.crashing' | 'app.recovered', site: SiteRow, data: Record<string, unknown>): void {
    this.d.events.record({ type, accountId: site.accountId, siteId: site.id, siteSlug: site.slug, data })
  }
}

const view = (p: ProcessView): ProcessView => ({ name: p.name, state: p.state, restarts: p.restarts, last_exit_code: p.last_exit_code, since: p.since })
