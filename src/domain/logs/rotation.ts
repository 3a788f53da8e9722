import { FileError } from '../../drivers/files/errors'
import { SITE_OWNER, type Home, type OpenHome } from '../../drivers/files/types'
import { SiteNotRunnableError, type ContainerRuntime } from '../../drivers/runtime/types'
import type { Logger } from '../../lib/logger'
import { REOPEN_LOGS } from './sources'

/** The folder of a site's logs, under its home. */
export const LOGS_FOLDER = 'logs'
/** Files listed in ~/logs at most per pass (a tenant may put thousands there). */
const MAX_LISTED = 1000
/** A site whose logs cannot be rotated is logged at most this often. */
const WARN_EVERY_MS = 60 * 60_000

export interface LogRotationDeps {
  /** Every site with a home to look at (SitesRepository.listLive). */
  sites: { listLive(): { slug: string }[] }
  runtime: Pick<ContainerRuntime, 'homePath' | 'exec'>
  /** Opens a site's home, on this box or on its node (HomeDrivers.openHome). */
  openHome: OpenHome
  log: Logger
  /** logs.rotate_bytes: a log this big or bigger is rotated. */
  rotateBytes: number
  /** logs.rotate_keep: rotated files kept per log. */
  keep: number
  /** Told after a site's logs were rotated (LogsService.rotatedLogs: it looks for rotated files again). */
  onRotated?: (slug: string) => void
}

/**
 * Size-based rotation of every site's logs (issue 38, item 3), run by `berth serve` every
 * logs.rotate_interval_seconds for every live site, on this box and on the nodes of a cluster (a
 * node's home through its agent, like every other home operation). Every regular file named
 * `*.log` in ~/logs counts, whoever writes it (the web server, PHP, the edge's access log, app
 * output to come): one of logs.rotate_bytes or more is renamed `name.1` (the older ones shifted,
 * logs.rotate_keep kept; drivers/files/rotate.ts), then the site's servers are told to open their
 * logs again (REOPEN_LOGS, through the runtime's exec, as the site user). Lines a server writes
 * between the rename and its reopening land at the end of `name.1`, which the logs API reads:
 * none is lost, unlike copy-and-truncate. A stopped site's servers open the new file when they start.
 *
 * @example
 * const rotation = new LogRotation({ sites, runtime, openHome, log, rotateBytes: 10 << 20, keep: 5 })
 * setInterval(() => void rotation.rotateAll(), 60_000)
 */
export class LogRotation {
  private pass: Promise<void> | null = null
  private warned = new Map<string, number>()

  constructor(private d: LogRotationDeps) {}

  /** One pass over every live site; a pass still running is returned instead of starting another. */
  rotateAll(): Promise<void> {
    this.pass ??= this.runPass().finally(() => (this.pass = null))
    return this.pass
  }

  private async runPass(): Promise<void> {
    for (const site of this.d.sites.listLive()) {
      try {
        await this.rotateSite(site.slug)
      } catch (err) {
        this.warnOnce(site.slug, { error: (err as Error).message })
      }
    }
  }

  /** Rotates the site's logs that reached the size; the names rotated (`logs/error.log`). */
  async rotateSite(slug: string): Promise<string[]> {
    let home: Home
    try {
      home = await this.d.openHome(await this.d.runtime.homePath(slug), SITE_OWNER)
    } catch (err) {
      // No volume (yet, or any more): nothing to rotate.
      if (err instanceof SiteNotRunnableError || (err as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw err
    }
    const rotated: string[] = []
    try {
      let entries
      try {
        entries = (await home.list(LOGS_FOLDER, MAX_LISTED)).entries
      } catch (err) {
        // No ~/logs, or the tenant put something else there: the start script repairs it.
        if (err instanceof FileError) return []
        throw err
      }
      for (const entry of entries) {
        if (entry.type !== 'file' || !entry.name.endsWith('.log') || entry.size < this.d.rotateBytes) continue
        try {
          if (await home.rotate(entry.path, this.d.keep)) rotated.push(entry.path)
        } catch (err) {
          // The site put something in the way (a folder named NAME.N): that log waits, the others rotate.
          if (!(err instanceof FileError)) throw err
          this.warnOnce(slug, { file: entry.path, error: err.message })
        }
      }
    } finally {
      home.close()
    }
    if (rotated.length === 0) return rotated
    this.d.onRotated?.(slug)
    await this.reopen(slug)
    return rotated
  }

  /** Tells the site's servers to open their logs again; a site not running has none open. */
  private async reopen(slug: string): Promise<void> {
    try {
      const res = await this.d.runtime.exec(slug, [...REOPEN_LOGS], { timeoutMs: 10_000 })
      if (res.exitCode !== 0) this.warnOnce(slug, { error: `reopening the logs exited ${res.exitCode}: ${res.output.slice(0, 200)}` })
    } catch (err) {
      if (err instanceof SiteNotRunnableError) return
      throw err
    }
  }

  private warnOnce(slug: string, fields: Record<string, unknown>): void {
    const now = Date.now()
    if (now - (this.warned.get(slug) ?? -Infinity) < WARN_EVERY_MS) return
    if (this.warned.size > 10_000) this.warned.clear()
    this.warned.set(slug, now)
    this.d.log.warn("could not rotate a site's logs", { site: slug, ...fields })
  }
}
