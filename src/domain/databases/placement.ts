import { PassThrough } from 'node:stream'
import type { Logger } from '../../lib/logger'
import type { SiteRow } from '../../store/schema'
import type { DatabaseRuntime, DatabaseSpec } from './ports'
import type { SiteDatabaseRow } from './repository'

export interface DatabaseCarrierDeps {
  runtime: DatabaseRuntime
  /** The site's databases that hold data (available, stopped, deleted in their grace), with their specs (DatabasesService.serversOf). */
  servers(site: SiteRow): Array<{ row: SiteDatabaseRow; spec: DatabaseSpec }>
  /** Told of each container it is about to remove (DatabaseLife.leaving): its events are not the database going down. */
  leaving?(containerId: string): void
  log: Logger
}

/** What a carry did, for the move's steps. */
export interface CarriedDatabases {
  databases: number
  bytes: number
  ms: number
}

/**
 * A site's databases carried from one node of a cluster to another in a move (docs/cluster.md
 * "Databases on nodes"): each one's server is made on the target beside the site (same name,
 * password and limits), then the engine's own dump on the node it leaves is streamed into the
 * engine's own restore there, with the site stopped (nothing writes meanwhile). Its server on the
 * node it leaves is untouched, so a move that fails goes back to it whole; it is removed once the
 * site serves on the target (`removeOn`), with its volume, as the site's old volume is.
 */
export class DatabaseCarrier {
  constructor(private d: DatabaseCarrierDeps) {}

  /** True when the site has a database to carry (and the runtime runs on nodes). */
  has(site: SiteRow): boolean {
    return this.d.runtime.onNode !== undefined && this.d.servers(site).length > 0
  }

  /**
   * Every database of the site up on `to` and holding the data it has on `from`; resolves once
   * each answers there. On a failure, what was made on `to` is removed and the error names the
   * database; `from` is left as it was.
   */
  async carry(site: SiteRow, from: string, to: string): Promise<CarriedDatabases> {
    const started = performance.now()
    const servers = this.d.servers(site)
    if (!servers.length || !this.d.runtime.onNode) return { databases: 0, bytes: 0, ms: 0 }
    const source = this.d.runtime.onNode(from)
    const target = this.d.runtime.onNode(to)
    let bytes = 0
    for (const { row, spec } of servers) {
      try {
        // A suspended site's database is stopped, a deleted one (in its grace) has only its volume:
        // started for the dump, then stopped (its container removed: deleted) on both sides.
        if (row.state !== 'available') await source.ensure(spec)
        await target.ensure(spec)
        bytes += await this.pipe(source, target, spec)
        if (row.state !== 'available') await Promise.all([this.rest(source, site, row), this.rest(target, site, row)])
      } catch (err) {
        await this.removeOn(site, to).catch((e) => this.d.log.warn('a database made on a move\'s target could not be removed', { site: site.slug, node: to, error: (e as Error).message }))
        if (row.state !== 'available') await this.rest(source, site, row).catch(() => {})
        throw new Error(`its database '${row.name}' could not be carried to ${to}: ${(err as Error).message}`)
      }
    }
    const carried = { databases: servers.length, bytes, ms: Math.round(performance.now() - started) }
    this.d.log.info('carried the databases of a site to another node', { site: site.slug, from, to, ...carried })
    return carried
  }

  /** A stopped database stopped again, a deleted one's container removed (its volume kept for its grace). */
  private async rest(runtime: DatabaseRuntime, site: SiteRow, row: SiteDatabaseRow): Promise<void> {
    if (row.state === 'deleted') await runtime.remove(site.slug, row.name, { volume: false })
    else await runtime.stop(site.slug, row.name)
  }

  /** Removes the site's database servers on `nodeId` with their volumes (its old node after a move; a failed target). */
  async removeOn(site: SiteRow, nodeId: string): Promise<void> {
    if (!this.d.runtime.onNode) return
    const there = this.d.runtime.onNode(nodeId)
    for (const { row } of this.d.servers(site)) {
      const left = await there.inspect(site.slug, row.name).catch(() => null)
      if (left) this.d.leaving?.(left.containerId)
      await there.remove(site.slug, row.name, { volume: true })
    }
  }

  /** The source's dump streamed into the target's restore; both must succeed (a dump cut short is never taken for whole). */
  private async pipe(source: DatabaseRuntime, target: DatabaseRuntime, spec: DatabaseSpec): Promise<number> {
    const stream = new PassThrough({ highWaterMark: 1024 * 1024 })
    const dumped = source.dump(spec, stream).then((r) => {
      stream.end()
      return r.bytes
    }, (err: Error) => {
      stream.destroy(err)
      throw err
    })
    const restored = target.restore(spec, stream).catch((err: Error) => {
      stream.destroy()
      throw err
    })
    const [bytes] = await Promise.all([dumped, restored])
    return bytes
  }
}
