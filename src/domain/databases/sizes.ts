import type { Clock } from '../../lib/clock'
import type { DatabaseRuntime } from './ports'

/** How long a database's measured size is reused (the site view, the databases list, /metrics). */
export const SIZE_CACHE_MS = 10_000

/**
 * The databases' sizes: the used space of each one's own disk (its volume's filesystem, statfs on
 * this box: no query to the server), measured at most once per SIZE_CACHE_MS per database and
 * shared by the views and the metrics. null when its server is not running or the disk cannot be read.
 */
export class DatabaseSizes {
  private cache = new Map<string, { at: number; bytes: Promise<number | null> }>()

  constructor(
    private runtime: Pick<DatabaseRuntime, 'inspect'>,
    private clock: Clock,
  ) {}

  get(slug: string, name: string): Promise<number | null> {
    const key = `${slug}/${name}`
    const now = this.clock.now()
    const hit = this.cache.get(key)
    if (hit && now - hit.at < SIZE_CACHE_MS) return hit.bytes
    if (this.cache.size > 10_000) this.cache.clear()
    const bytes = this.runtime.inspect(slug, name).then((s) => (s?.running ? s.sizeBytes : null), () => null)
    this.cache.set(key, { at: now, bytes })
    return bytes
  }

  /** Its figure is stale (it went down, came back, was removed). */
  forget(slug: string, name: string): void {
    this.cache.delete(`${slug}/${name}`)
  }
}
