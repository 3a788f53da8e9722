import type { DatabaseRunning, DatabaseRuntime, DatabaseSpec, DatabaseState, DbEngine } from '../../src/domain/databases'

const VERSIONS: Record<DbEngine, string> = { postgres: '15.10', mariadb: '10.11.6', redis: '7.0.15' }

/**
 * A fake DatabaseRuntime (domain/databases/ports.ts) for route and rule tests, in process: it
 * keeps each database's state (running, password, volume) and records the calls, holding the
 * port's contracts (ensure idempotent, remove of a missing one a no-op). The real driver
 * (drivers/databases) is tested against the engine; the compiled binary's e2e uses it.
 */
export class FakeDatabaseRuntime implements DatabaseRuntime {
  calls: { op: string; slug: string; name: string; volume?: boolean }[] = []
  dbs = new Map<string, { engine: DbEngine; password: string; running: boolean; volume: boolean }>()
  /** The next ensure of these names fails with this reason (the server's last log line). */
  failing = new Map<string, string>()
  /** Milliseconds each ensure takes, so that parallel creates overlap. */
  delayMs = 0

  async ensure(spec: DatabaseSpec): Promise<DatabaseRunning> {
    this.calls.push({ op: 'ensure', slug: spec.slug, name: spec.name })
    if (this.delayMs) await Bun.sleep(this.delayMs)
    const reason = this.failing.get(spec.name)
    if (reason !== undefined) {
      this.dbs.set(key(spec.slug, spec.name), { engine: spec.engine, password: spec.password, running: false, volume: true })
      throw new Error(reason)
    }
    this.dbs.set(key(spec.slug, spec.name), { engine: spec.engine, password: spec.password, running: true, volume: true })
    return { host: `db-${spec.name}`, port: 5432, version: VERSIONS[spec.engine] }
  }

  async inspect(slug: string, name: string): Promise<DatabaseState | null> {
    const db = this.dbs.get(key(slug, name))
    return db ? { running: db.running, containerId: `c-${slug}-${name}`, sizeBytes: db.running ? 7811072 : null } : null
  }

  async stop(slug: string, name: string): Promise<void> {
    this.calls.push({ op: 'stop', slug, name })
    const db = this.dbs.get(key(slug, name))
    if (db) db.running = false
  }

  async remove(slug: string, name: string, opts: { volume: boolean }): Promise<void> {
    this.calls.push({ op: 'remove', slug, name, volume: opts.volume })
    const db = this.dbs.get(key(slug, name))
    if (!db) return
    if (opts.volume) this.dbs.delete(key(slug, name))
    else db.running = false
  }

  async setPassword(spec: DatabaseSpec, password: string): Promise<void> {
    this.calls.push({ op: 'setPassword', slug: spec.slug, name: spec.name })
    if (this.delayMs) await Bun.sleep(this.delayMs)
    const db = this.dbs.get(key(spec.slug, spec.name))
    if (!db?.running) throw new Error(`database ${spec.name} is not running`)
    db.password = password
  }

  async dump(): Promise<{ bytes: number }> {
    throw new Error('FakeDatabaseRuntime does not dump')
  }

  async restore(): Promise<void> {
    throw new Error('FakeDatabaseRuntime does not restore')
  }

  /** Each database's log: what a test wrote into it, the newest `tail` lines. */
  logLines = new Map<string, string[]>()

  async logs(slug: string, name: string, tail: number): Promise<string[] | null> {
    if (!this.dbs.has(key(slug, name))) return null
    return (this.logLines.get(key(slug, name)) ?? [`${name}: ready to accept connections`]).slice(-tail)
  }

  async listManaged() {
    return [...this.dbs].map(([k, db]) => ({ slug: k.split('/')[0]!, name: k.split('/')[1]!, engine: db.engine, running: db.running }))
  }
}

const key = (slug: string, name: string) => `${slug}/${name}`
