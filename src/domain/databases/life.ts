import { KeyedLock } from '../../lib/keyed-lock'
import type { Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { SiteEventAction } from '../../drivers/runtime/types'
import { conflict, op, say } from '../errors'
import type { Plan, PlansService } from '../plans'
import type { DatabaseRuntime, DatabaseSpec } from './ports'
import type { DatabasesRepository, SiteDatabaseRow } from './repository'
import type { DatabaseSizes } from './sizes'
import type { DatabaseEvents } from './database-events'
import { DB_USER, HAS_SERVER } from './rules'

export interface DatabaseLifeDeps {
  repo: DatabasesRepository
  runtime: DatabaseRuntime
  plans: Pick<PlansService, 'get'>
  sites: { find(siteId: string): SiteRow | undefined }
  clock: Clock
  log: Logger
  /** The database's opened password; null when this box cannot open it. */
  opened(row: SiteDatabaseRow): string | null
  /** True while a call of the API (create, delete, rotate) changes the database. */
  busy(siteId: string, name: string): boolean
  /** Where the sizes are measured and reused (./sizes.ts); absent: /metrics has no sizes. */
  sizes?: Pick<DatabaseSizes, 'measure' | 'forget'>
  /**
   * The site's own runs (domain/sites/runner.ts): true while one is under way here (a move, which
   * carries its databases and removes them from the node it left; a scale); `settled` resolves once
   * none is. Absent: none ever is.
   */
  runs?: { underWay(slug: string): boolean; settled(slug: string): Promise<void> }
  /** Records `database.down` when it goes down behind Berth's back, `database.up` when it is back (./database-events.ts). */
  events?: Pick<DatabaseEvents, 'changed'>
}

/** One database as /metrics shows it (domain/prometheus: berth_database_up, berth_database_size_bytes). */
export interface DatabaseFigures {
  site: string
  database: string
  engine: string
  up: boolean
  sizeBytes: number | null
}



/**
 * A site's databases live with it (issue 40 item 4, docs/api.md "Databases"): stopped when the
 * site is suspended or pending deletion (state `stopped`, set before the server stops), started
 * when it runs again (`available` only once the server answers a query), given the plan's memory
 * and CPU when the plan changes (the container recreated on its volume, data kept), and brought
 * back when its container dies or is removed behind Berth's back (`recovering` from the engine's
 * event until it answers again). The store says the truth: the events and the reconcile pass keep
 * it so. One change of a database at a time (a per-database lock); a database an API call is
 * changing is left to that call.
 */
export class DatabaseLife {
  private locks = new KeyedLock()
  /** Per database id: the limits it was last brought up with and the container it runs in; dropped when it goes down. */
  private up = new Map<string, { key: string; containerId: string | null }>()
  /** Databases being brought up or stopped by this class now: their containers' events are its own. */
  private working = new Set<string>()

  constructor(private d: DatabaseLifeDeps) {}

  /** The site stopped for good (suspended, pending deletion): each database `stopped`, then its server stopped, data kept. */
  async stopFor(site: SiteRow): Promise<void> {
    if (this.d.sites.find(site.id)?.status === 'active') return
    for (const row of this.d.repo.list(site.id)) {
      if (!HAS_SERVER.has(row.state) || this.d.busy(site.id, row.name)) continue
      await this.under(row, async () => {
        const current = this.d.repo.find(site.id, row.name)
        if (!current || !HAS_SERVER.has(current.state)) return
        if (current.state !== 'stopped') this.d.repo.update(row.id, { state: 'stopped', error: null, updatedAt: this.d.clock.now() })
        this.up.delete(row.id)
        await this.d.runtime.stop(site.slug, row.name)
      })
    }
  }

  /**
   * The site runs: each of its databases not known to be up with its plan's limits is started (or
   * recreated with the new limits, data kept) and turns `available` once it answers. A database
   * that does not come up stays `recovering` with the reason in `error`; the next pass tries again.
   */
  async startFor(site: SiteRow): Promise<void> {
    if (this.d.sites.find(site.id)?.status !== 'active') return
    await Promise.all(this.d.repo.list(site.id).filter((r) => HAS_SERVER.has(r.state)).map((row) => this.bringUp(site, row).catch((err) => {
      this.d.log.warn('a database of a running site could not be started; the reconcile pass retries', { site: site.slug, database: row.name, error: (err as Error).message })
    })))
  }

  /**
   * An engine event of a database's container: one that died or was removed while `available` is
   * looked at once the site's run under way (a move) is over, and when the database has no
   * running container where the site is placed, it is `recovering` and brought back at once. The
   * event alone decides nothing: a move removes the container on the node the site left, whose
   * events come after the database runs on the new one.
   */
  onEvent(e: { action: SiteEventAction; siteId: string; slug: string; containerId: string; database: string }): void {
    if (e.action !== 'die' && e.action !== 'destroy') return
    const row = this.d.repo.find(e.siteId, e.database)
    if (!row || row.state !== 'available' || this.working.has(row.id) || this.d.busy(e.siteId, e.database)) return
    const known = this.up.get(row.id)?.containerId
    if (known && known !== e.containerId) return
    void this.lookAfter(e).catch((err) => this.d.log.warn('could not bring a database back; the reconcile pass retries', { site: e.slug, database: e.database, error: (err as Error).message }))
  }

  private async lookAfter(e: { action: SiteEventAction; siteId: string; slug: string; containerId: string; database: string }): Promise<void> {
    await this.d.runs?.settled(e.slug)
    const row = this.d.repo.find(e.siteId, e.database)
    if (!row || row.state !== 'available' || this.working.has(row.id) || this.d.busy(e.siteId, e.database)) return
    const now = await this.d.runtime.inspect(e.slug, e.database).catch(() => null)
    if (now?.running && now.containerId !== e.containerId) {
      // Another container serves it (where a move put it): the event was of one it left.
      const seen = this.up.get(row.id)
      if (seen) this.up.set(row.id, { ...seen, containerId: now.containerId })
      return
    }
    const again = this.d.repo.find(e.siteId, e.database)
    if (!again || again.state !== 'available' || this.working.has(row.id) || this.d.busy(e.siteId, e.database)) return
    this.wentDown(again, e.action === 'die' ? 'its container died' : 'its container was removed')
    const site = this.d.sites.find(e.siteId)
    if (site?.status !== 'active' || site.slug !== e.slug) return
    await this.bringUp(site, again)
  }

  /**
   * Makes the engine match the store (each reconcile pass, and at start): the databases of active
   * sites run (one that is not running, found by one listing, is `recovering` and brought back),
   * those of suspended and pending-deletion sites are stopped; a database container the store holds
   * as deleted, or not at all, is stopped (never removed: its data stays until the site is purged).
   */
  async reconcile(): Promise<string[]> {
    const errors: string[] = []
    const listed = await this.d.runtime.listManaged()
    const running = new Set(listed.filter((c) => c.running).map((c) => `${c.slug}/${c.name}`))
    const bySite = new Map<string, SiteDatabaseRow[]>()
    for (const row of this.d.repo.allLive()) bySite.set(row.siteId, [...(bySite.get(row.siteId) ?? []), row])
    const wanted = new Set<string>()
    await Promise.all([...bySite].map(async ([siteId, rows]) => {
      const site = this.d.sites.find(siteId)
      if (!site) return
      if (this.d.runs?.underWay(site.slug)) {
        // Being moved (or scaled): that work carries and starts its databases itself; left as they are.
        for (const row of rows) wanted.add(`${site.slug}/${row.name}`)
        return
      }
      try {
        if (site.status === 'active') {
          for (const row of rows) {
            wanted.add(`${site.slug}/${row.name}`)
            const current = this.d.repo.find(siteId, row.name)
            if (current?.state === 'available' && !running.has(`${site.slug}/${row.name}`) && !this.working.has(row.id) && !this.d.busy(siteId, row.name)) this.wentDown(current, 'its container was not running')
          }
          await this.startFor(site)
        } else if (site.status === 'suspended' || site.status === 'pending_deletion') {
          await this.stopFor(site)
        }
      } catch (err) {
        errors.push(`${site.slug}: ${(err as Error).message}`)
      }
    }))
    for (const c of listed) {
      if (!c.running || wanted.has(`${c.slug}/${c.name}`)) continue
      const site = [...bySite.keys()].map((id) => this.d.sites.find(id)).find((s) => s?.slug === c.slug)
      if (site && site.status !== 'active') continue // stopped above
      // Not a database the store wants running (deleted, or unknown): stopped, never removed.
      await this.d.runtime.stop(c.slug, c.name).catch((err) => errors.push(`${c.slug}/${c.name}: ${(err as Error).message}`))
    }
    return errors
  }

  /**
   * Conflict when the site's databases do not fit `plan` (a plan change): more of them than it
   * allows, or an engine it lacks. The message names the databases to delete first.
   */
  requireFits(site: SiteRow, plan: Plan): void {
    const allowed = plan.features.databases
    const held = this.d.repo.list(site.id).filter((r) => r.state !== 'deleted' && r.state !== 'failed')
    const foreign = held.filter((r) => !allowed.engines.includes(r.engine))
    if (foreign.length > 0) {
      throw conflict(say`Plan '${plan.slug}' has no ${[...new Set(foreign.map((r) => r.engine))].join(' or ')} databases, and '${site.slug}' has ${foreign.map((r) => `'${r.name}' (${r.engine})`).join(', ')}; delete ${foreign.length === 1 ? 'it' : 'them'} first (${op('deleteDatabase', { tenant_slug: site.slug, name: foreign[0]!.name })}) or pick a plan with ${foreign.length === 1 ? 'its engine' : 'their engines'} (${op('listPlans')}).`, 'new_plan')
    }
    if (held.length > allowed.max) {
      const over = held.slice(allowed.max).map((r) => `'${r.name}'`)
      throw conflict(say`Plan '${plan.slug}' allows ${allowed.max} database${allowed.max === 1 ? '' : 's'}, and '${site.slug}' has ${held.length}; delete ${held.length - allowed.max} first (for instance ${over.join(', ')}: ${op('deleteDatabase', { tenant_slug: site.slug, name: held[held.length - 1]!.name })}) or pick a plan with more (${op('listPlans')}).`, 'new_plan')
    }
  }

  /** Every database of the box that is not deleted, of a site that is not: up (`available`, as the store keeps it true) and its size. */
  async figures(): Promise<DatabaseFigures[]> {
    const rows = this.d.repo.allLive().map((row) => ({ row, site: this.d.sites.find(row.siteId) })).filter((x) => x.site && x.site.status !== 'deleted')
    return Promise.all(rows.map(async ({ row, site }) => {
      const seen = row.state === 'available' && this.d.sizes ? await this.d.sizes.measure(site!.slug, row.name) : null
      // As the view: available in the store, and its container not seen stopped.
      const up = row.state === 'available' && seen?.running !== false
      return { site: site!.slug, database: row.name, engine: row.engine, up, sizeBytes: seen?.running ? seen.sizeBytes : null }
    }))
  }

  private wentDown(row: SiteDatabaseRow, why: string): void {
    this.up.delete(row.id)
    const slug = this.d.sites.find(row.siteId)?.slug
    if (slug) this.d.sizes?.forget(slug, row.name)
    const down = () => this.d.repo.update(row.id, { state: 'recovering', error: null, updatedAt: this.d.clock.now() })
    if (this.d.events) this.d.events.changed('database.down', row, down)
    else down()
    this.d.log.warn('a database went down; bringing it back', { site_id: row.siteId, database: row.name, why })
  }

  private async bringUp(site: SiteRow, row: SiteDatabaseRow): Promise<void> {
    const plan = this.d.plans.get(site.planSlug)
    const memoryMb = plan.features.databases.memory_mb
    const key = `${memoryMb}/${plan.features.cpu_cores}`
    const seen = this.up.get(row.id)
    if (row.state === 'available' && seen?.key === key) return
    await this.under(row, async () => {
      const current = this.d.repo.find(site.id, row.name)
      if (!current || !HAS_SERVER.has(current.state) || this.d.busy(site.id, row.name)) return
      if (current.state === 'available' && this.up.get(row.id)?.key === key) return
      const password = this.d.opened(current)
      if (password === null) {
        this.d.log.error('cannot start a database whose password this box cannot open; rotate its password', { site: site.slug, database: row.name })
        return
      }
      // New limits (a plan change) recreate its container: it does not answer until the new one does.
      const restarting = current.state === 'available' && (current.memoryMb !== memoryMb || (seen !== undefined && seen.key !== key))
      if (current.memoryMb !== memoryMb || restarting) this.d.repo.update(row.id, { memoryMb, ...(restarting ? { state: 'recovering' as const } : {}), updatedAt: this.d.clock.now() })
      if (restarting) this.d.log.info('database restarting with its plan\'s new limits', { site: site.slug, database: row.name, memory_mb: memoryMb, cpu_cores: plan.features.cpu_cores })
      const spec: DatabaseSpec = { siteId: site.id, slug: site.slug, name: row.name, engine: row.engine, memoryMb, cpuCores: plan.features.cpu_cores, diskGb: current.diskGb, user: DB_USER, password }
      let running
      try {
        running = await this.d.runtime.ensure(spec)
      } catch (err) {
        if (current.state === 'available') this.wentDown(current, 'it could not be started again')
        this.d.repo.update(row.id, { error: (err as Error).message.slice(0, 2000), updatedAt: this.d.clock.now() })
        throw err
      }
      const state = await this.d.runtime.inspect(site.slug, row.name).catch(() => null)
      // A suspension or a deletion meanwhile has the last word (it waits for this lock, or for the runtime's).
      const after = this.d.repo.find(site.id, row.name)
      if (!after || !HAS_SERVER.has(after.state) || this.d.sites.find(site.id)?.status !== 'active') return
      this.up.set(row.id, { key, containerId: state?.containerId ?? null })
      this.d.sizes?.forget(site.slug, row.name)
      const available = () => this.d.repo.update(row.id, { state: 'available', version: running.version, error: null, updatedAt: this.d.clock.now() })
      // Back from going down (wentDown), not from a restart of Berth's own (new limits) nor a resumption.
      if (current.state === 'recovering' && !restarting && this.d.events) this.d.events.changed('database.up', row, available)
      else available()
      if (current.state !== 'available') this.d.log.info('database up', { site: site.slug, database: row.name, was: current.state })
    })
  }

  private under(row: SiteDatabaseRow, fn: () => Promise<void>): Promise<void> {
    return this.locks.run(row.id, async () => {
      this.working.add(row.id)
      try {
        await fn()
      } finally {
        this.working.delete(row.id)
      }
    })
  }
}
