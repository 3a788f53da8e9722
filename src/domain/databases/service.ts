import { SecretUnreadableError } from '../../drivers/secrets/errors'
import type { SecretBox } from '../../drivers/secrets/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { AuditActor, AuditTrail } from '../audit'
import { conflict, ConflictForNowError, forbidden, notFound, op, say, unavailable } from '../errors'
import type { PlansService } from '../plans'
import type { DatabaseRuntime, DatabaseSpec, DbEngine } from './ports'
import type { DatabasesRepository, SiteDatabaseRow } from './repository'
import { checkDbName, DB_PORTS, DB_USER, databaseOf, FIRST_DB_VARIABLE, HAS_SERVER, hostOf, newPassword, urlOf, variableOf } from './rules'
import type { DatabaseSizes } from './sizes'
import type { DatabaseEvents } from './database-events'
import type { DatabaseLogView, DatabaseView, DatabaseWithUrlView, SiteDatabaseSummary } from './views'
import { redact } from '../env'

export interface DatabasesDeps {
  store: Pick<Store, 'write'>
  repo: DatabasesRepository
  runtime: DatabaseRuntime
  box: SecretBox
  plans: Pick<PlansService, 'get'>
  audit: AuditTrail
  clock: Clock
  log: Logger
  /** The site's variables changed (a database made, deleted, its password rotated): the settings' listeners restart its app with them. */
  changed(site: SiteRow): Promise<void>
  /** The names the site sets itself (domain/env), which win over a database's variables. */
  ownNames(siteId: string): ReadonlySet<string>
  /** The slug of a site by its id (a reaped site's databases are found by it). */
  slugOf(siteId: string): string | undefined
  /** The sizes shown, measured cheaply and reused a few seconds (./sizes.ts); absent: measured per view. */
  sizes?: Pick<DatabaseSizes, 'measure'>
  /** Records `database.created` and `database.deleted` with the change (./database-events.ts); absent: none. */
  events?: Pick<DatabaseEvents, 'changed'>
}

/** Seconds a caller waits before retrying a database another call is changing. */
const BUSY_RETRY_S = 5
/** How many of a database's newest log lines a `search` looks through. */
export const LOG_SEARCH_LINES = 10_000

/**
 * The sites' managed databases (issue 40, docs/api.md "Databases"): PostgreSQL, MariaDB and Redis
 * servers each in a container of its own on the site's network (DatabaseRuntime, drivers/databases),
 * counted against the plan's features.databases, their passwords sealed with the box key, their
 * URLs handed to the site's app, build, hook and exec as variables (`variablesOf`, merged under the
 * site's own settings by SiteEnvService). Revealing or rotating a password is audited.
 */
export class DatabasesService {
  /** Databases a call is changing (create, delete, rotate): `${siteId}/${name}`. */
  private busy = new Set<string>()

  constructor(private d: DatabasesDeps) {}

  async list(site: SiteRow): Promise<DatabaseView[]> {
    const rows = this.d.repo.list(site.id)
    const names = this.providedNames(site.id, rows)
    return Promise.all(rows.map((row) => this.viewOf(site, row, names)))
  }

  async get(site: SiteRow, name: string): Promise<DatabaseView> {
    const row = this.require(site, name)
    return this.viewOf(site, row, this.providedNames(site.id))
  }

  /**
   * Makes a database and answers once its server answers a query, with its URL. The plan's limit
   * is checked and the row inserted (state creating) in one write, so parallel calls never make
   * more than the plan allows; an engine's failure leaves the row `failed` with the server's
   * reason, removes what was made, and answers 503.
   */
  async create(site: SiteRow, body: { engine: DbEngine; name: string }): Promise<DatabaseWithUrlView> {
    const { engine, name } = body
    checkDbName(name)
    const plan = this.d.plans.get(site.planSlug)
    const allowed = plan.features.databases
    if (!allowed.engines.includes(engine)) {
      throw forbidden(say`The ${plan.slug} plan does not include ${engine} databases (it has ${allowed.engines.join(', ') || 'none'}); scale to a plan that does (${op('listPlans')} lists each plan's features.databases).`, 'engine')
    }
    const password = newPassword()
    let stale = false
    const row = this.hold(site, name, () => this.d.store.write(() => {
      const existing = this.d.repo.find(site.id, name)
      stale = existing !== undefined && this.isStale(existing)
      if (existing && existing.state !== 'failed' && !stale) {
        throw conflict(existing.state === 'deleted'
          ? say`'${site.slug}' had a database '${name}', deleted; its data is kept until the site's deletion grace ends, and its name with it. Choose another name.`
          : say`'${site.slug}' already has a database '${name}' (${op('getDatabase', { tenant_slug: site.slug, name })}); choose another name.`, 'name')
      }
      const held = this.d.repo.list(site.id).filter((r) => r.state !== 'deleted' && r.state !== 'failed' && !this.isStale(r)).length
      if (held >= allowed.max) {
        throw forbidden(say`'${site.slug}' has ${held} of the ${allowed.max} database${allowed.max === 1 ? '' : 's'} the ${plan.slug} plan allows; delete one (${op('deleteDatabase', { tenant_slug: site.slug })}) or scale to a plan with more (${op('listPlans')}).`, null)
      }
      // A failed one held nothing, a stale one is failed: creating it again starts over.
      if (existing) this.d.repo.remove(existing.id)
      const now = this.d.clock.now()
      const made: SiteDatabaseRow = {
        id: crypto.randomUUID(), siteId: site.id, name, engine, state: 'creating', version: null, sealed: this.seal(site.id, name, password),
        memoryMb: allowed.memory_mb, diskGb: allowed.disk_gb, error: null, createdAt: now, updatedAt: now, deletedAt: null,
      }
      this.d.repo.insert(made)
      return made
    }))
    return this.whileBusy(site, name, async () => {
      const spec = this.specOf(site, row, password)
      try {
        // What a create cut short left (its server made with another password) goes first.
        if (stale) await this.d.runtime.remove(site.slug, name, { volume: true })
        const running = await this.d.runtime.ensure(spec)
        this.told('database.created', row, () => this.d.repo.update(row.id, { state: 'available', version: running.version, updatedAt: this.d.clock.now() }))
      } catch (err) {
        const reason = (err as Error).message
        this.d.log.warn('databases: a database could not be started', { site: site.slug, name, engine, error: reason })
        this.d.repo.update(row.id, { state: 'failed', error: reason, updatedAt: this.d.clock.now() })
        await this.d.runtime.remove(site.slug, name, { volume: true }).catch((e) => this.d.log.error('databases: what a failed database made could not be removed', { site: site.slug, name, error: (e as Error).message }))
        throw unavailable(say`The ${engine} server of '${name}' did not start: ${reason} Nothing was kept; retry the same call (${op('createDatabase', { tenant_slug: site.slug })}) in a minute.`)
      }
      await this.d.changed(site)
      return { ...(await this.get(site, name)), url: urlOf(engine, name, password) }
    }, true)
  }

  /** Removes the database's server; its data (the volume) is kept for the site's deletion grace and its name stays taken. */
  async delete(site: SiteRow, name: string): Promise<DatabaseView> {
    const row = this.require(site, name)
    if (row.state === 'deleted') return this.get(site, name)
    return this.whileBusy(site, name, async () => {
      const keep = row.state !== 'failed'
      await this.d.runtime.remove(site.slug, name, { volume: !keep })
      const now = this.d.clock.now()
      // A failed one held nothing: it goes; any other keeps its data and name until its site is purged.
      if (keep) this.told('database.deleted', row, () => this.d.repo.update(row.id, { state: 'deleted', deletedAt: now, updatedAt: now }))
      else this.d.repo.remove(row.id)
      await this.d.changed(site)
      return keep ? this.get(site, name) : this.viewOf(site, { ...row, state: 'deleted', deletedAt: now }, new Set())
    })
  }

  /** Runs `change` with the event it tells of, in one transaction (without an event log: the change alone). */
  private told(type: 'database.created' | 'database.deleted', row: SiteDatabaseRow, change: () => void): void {
    if (this.d.events) this.d.events.changed(type, row, change)
    else change()
  }

  /** The database's URL with its password; recorded in the site's audit trail. */
  async reveal(site: SiteRow, name: string, actor: AuditActor): Promise<DatabaseWithUrlView> {
    const row = this.requireServing(site, name)
    const record = this.d.audit.begin({ siteId: site.id, kind: 'database', actor, command: `reveal-password ${name}` })
    const password = this.opened(row)
    if (password === null) {
      record.end({ exitCode: 1, reason: 'password unreadable' })
      throw conflict(say`This box cannot open the password of '${name}' (its store was restored without the key it was sealed with); give it a new one with ${op('rotateDatabasePassword', { tenant_slug: site.slug, name })}.`)
    }
    record.end({ exitCode: 0 })
    return { ...(await this.get(site, name)), url: urlOf(row.engine, name, password) }
  }

  /**
   * A new password: set in the running server (data and connections kept), then stored, then the
   * site's app restarted with the new variables. The old password stops working at once.
   */
  async rotate(site: SiteRow, name: string, actor: AuditActor): Promise<DatabaseWithUrlView> {
    const row = this.requireServing(site, name)
    return this.whileBusy(site, name, async () => {
      const record = this.d.audit.begin({ siteId: site.id, kind: 'database', actor, command: `rotate-password ${name}` })
      const password = newPassword()
      try {
        await this.d.runtime.setPassword(this.specOf(site, row, this.opened(row) ?? ''), password)
      } catch (err) {
        record.end({ exitCode: 1, reason: (err as Error).message.slice(0, 200) })
        throw unavailable(say`The password of '${name}' could not be changed: ${(err as Error).message} The old one still works; retry in a minute.`)
      }
      this.d.repo.update(row.id, { sealed: this.seal(site.id, name, password), updatedAt: this.d.clock.now() })
      record.end({ exitCode: 0 })
      await this.d.changed(site)
      return { ...(await this.get(site, name)), url: urlOf(row.engine, name, password) }
    })
  }

  /**
   * The variables the site's databases give it: `{NAME}_URL` for each that has a server
   * (available, stopped, or recovering: the URL holds while it comes back, and an app that
   * retries its connection gets it again), and DATABASE_URL for the oldest of them. A password
   * this box cannot open gives nothing.
   */
  variablesOf(siteId: string): Record<string, string> {
    const out: Record<string, string> = {}
    for (const row of this.d.repo.list(siteId)) {
      if (!HAS_SERVER.has(row.state)) continue
      const password = this.opened(row)
      if (password === null) continue
      const url = urlOf(row.engine, row.name, password)
      if (!(FIRST_DB_VARIABLE in out)) out[FIRST_DB_VARIABLE] = url
      out[variableOf(row.name)] = url
    }
    return out
  }

  /** The opened passwords of the site's databases that have a server: masked in outputs and logs like the secrets. */
  passwordsOf(siteId: string): string[] {
    return this.d.repo.list(siteId).filter((r) => HAS_SERVER.has(r.state)).map((r) => this.opened(r)).filter((p): p is string => p !== null)
  }

  /** The site's databases as its view shows them (GET /sites/{slug}/): name, engine, state, size. */
  async summaryOf(site: SiteRow): Promise<SiteDatabaseSummary[]> {
    return (await this.list(site)).filter((v) => v.state !== 'deleted').map((v) => ({ name: v.name, engine: v.engine, state: v.state, size_bytes: v.size_bytes }))
  }

  /** True while a call (create, delete, rotate) changes the database: the site's lifecycle leaves it to that call (./life.ts). */
  busyWith(siteId: string, name: string): boolean {
    return this.busy.has(`${siteId}/${name}`)
  }

  /** The database's password, opened; null when this box cannot open it (./life.ts starts servers with it). */
  passwordOf(row: SiteDatabaseRow): string | null {
    return this.opened(row)
  }

  /** The site's databases that hold data (available, recovering, stopped, deleted in their grace) and their specs: a move carries them (placement.ts). */
  serversOf(site: SiteRow): Array<{ row: SiteDatabaseRow; spec: DatabaseSpec }> {
    return this.d.repo.list(site.id).filter((r) => r.state === 'available' || r.state === 'recovering' || r.state === 'stopped' || r.state === 'deleted').map((row) => ({ row, spec: this.specOf(site, row, this.opened(row) ?? '') }))
  }

  /** A reaped site's databases go with it: their containers and volumes, then their rows. */
  async removeAllFor(siteId: string): Promise<void> {
    const slug = this.d.slugOf(siteId)
    for (const row of this.d.repo.list(siteId)) {
      if (slug !== undefined) await this.d.runtime.remove(slug, row.name, { volume: true })
    }
    this.d.repo.removeAll(siteId)
  }

  private providedNames(siteId: string, rows = this.d.repo.list(siteId)): Map<string, string[]> {
    const own = this.d.ownNames(siteId)
    const names = new Map<string, string[]>()
    let first = true
    for (const row of rows) {
      if (row.state !== 'available' && row.state !== 'stopped') continue
      const given = [variableOf(row.name), ...(first ? [FIRST_DB_VARIABLE] : [])].filter((n) => !own.has(n))
      first = false
      names.set(row.name, given)
    }
    return names
  }

  /**
   * A row left `creating` by a process that stopped before its server answered (berth serve is
   * the only writer, so a create of this process would hold it busy): failed, and replaced by the
   * next create of its name.
   */
  private isStale(row: SiteDatabaseRow): boolean {
    return row.state === 'creating' && !this.busy.has(`${row.siteId}/${row.name}`)
  }

  private async viewOf(site: SiteRow, stored: SiteDatabaseRow, names: Map<string, string[]> | Set<never>): Promise<DatabaseView> {
    const row: SiteDatabaseRow = this.isStale(stored) ? { ...stored, state: 'failed', error: 'Berth stopped before its server first answered; create it again.' } : stored
    let size: number | null = null
    let state = row.state
    if (row.state === 'available') {
      const seen = this.d.sizes ? await this.d.sizes.measure(site.slug, row.name) : await this.d.runtime.inspect(site.slug, row.name).then((s) => ({ running: s?.running ?? false, sizeBytes: s?.sizeBytes ?? null }), () => null)
      size = seen?.running ? seen.sizeBytes : null
      // Its container does not run and the store does not know yet (Berth just started; the reconcile pass brings it back): not available.
      if (seen && !seen.running) state = 'recovering'
    }
    return {
      name: row.name, engine: row.engine, version: row.version, state, size_bytes: size, memory_mb: row.memoryMb, disk_gb: row.diskGb,
      host: hostOf(row.name), port: DB_PORTS[row.engine], user: DB_USER, database: databaseOf(row.engine, row.name),
      variables: names instanceof Map ? (names.get(row.name) ?? []) : [], created_at: iso(row.createdAt), error: row.error,
    }
  }

  /** The runtime's spec of a database (also for ./archives.ts). */
  specOf(site: SiteRow, row: SiteDatabaseRow, password: string): DatabaseSpec {
    const plan = this.d.plans.get(site.planSlug)
    return { siteId: site.id, slug: site.slug, name: row.name, engine: row.engine, memoryMb: row.memoryMb, cpuCores: plan.features.cpu_cores, diskGb: row.diskGb, user: DB_USER, password }
  }

  /**
   * The newest `lines` lines of the database's server log (its container's output: starts, stops,
   * errors, refused logins), oldest first; with `search`, those holding it among the newest
   * LOG_SEARCH_LINES. The site's database passwords are masked (a server may quote a statement
   * that failed). A database with no container now (deleted, failed) has none.
   */
  async logs(site: SiteRow, name: string, q: { lines: number; search?: string }): Promise<DatabaseLogView> {
    this.require(site, name)
    const search = q.search
    const read = (await this.d.runtime.logs(site.slug, name, search ? LOG_SEARCH_LINES : q.lines)) ?? []
    const passwords = this.passwordsOf(site.id)
    return { name, lines: (search ? read.filter((line) => line.includes(search)) : read).slice(-q.lines).map((line) => redact(line, passwords)) }
  }

  private require(site: SiteRow, name: string): SiteDatabaseRow {
    const row = this.d.repo.find(site.id, name)
    if (!row) throw notFound(say`'${site.slug}' has no database '${name}'; ${op('listDatabases', { tenant_slug: site.slug })} lists them.`, 'name')
    return row
  }

  private requireServing(site: SiteRow, name: string): SiteDatabaseRow {
    const row = this.require(site, name)
    if (row.state !== 'available') throw conflict(say`Database '${name}' is ${row.state}; only an available database has a password to show or change (${op('getDatabase', { tenant_slug: site.slug, name })}).`, 'name')
    return row
  }

  /** Runs `fn` with the database marked busy (taken already when `held`); another change of it meanwhile is a 409 to retry. */
  async whileBusy<T>(site: SiteRow, name: string, fn: () => Promise<T>, held = false): Promise<T> {
    const key = `${site.id}/${name}`
    if (!held) this.hold(site, name, () => undefined)
    try {
      return await fn()
    } finally {
      this.busy.delete(key)
    }
  }

  private hold<T>(site: SiteRow, name: string, fn: () => T): T {
    const key = `${site.id}/${name}`
    if (this.busy.has(key)) throw new ConflictForNowError(`Database '${name}' is being changed by another call; retry in ${BUSY_RETRY_S} seconds.`, BUSY_RETRY_S)
    const out = fn()
    this.busy.add(key)
    return out
  }

  private seal(siteId: string, name: string, password: string): string {
    return this.d.box.seal(password, { siteId, name: `database:${name}` })
  }

  /** The database's password, or null when this box cannot open it. */
  opened(row: SiteDatabaseRow): string | null {
    try {
      return this.d.box.open(row.sealed, { siteId: row.siteId, name: `database:${row.name}` })
    } catch (err) {
      if (err instanceof SecretUnreadableError) return null
      throw err
    }
  }
}
