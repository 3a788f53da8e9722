import type { Clock } from '../../lib/clock'

/**
 * Values that are costly to get (a walk of a site's files, the engine's stats sampling, about a
 * second) kept per key for `ttlMs`; concurrent askers share the load in flight, and a failed load
 * is forgotten at once so the next ask tries again.
 */
export class TtlCache<T> {
  private entries = new Map<string, { at: number; value: Promise<T> }>()

  constructor(private clock: Clock, private ttlMs: number, private maxEntries = 10_000) {}

  get(key: string, load: () => Promise<T>): Promise<T> {
    const now = this.clock.now()
    const hit = this.entries.get(key)
    if (hit && now - hit.at < this.ttlMs) return hit.value
    if (this.entries.size >= this.maxEntries) this.entries.clear()
    const value = load()
    const entry = { at: now, value }
    this.entries.set(key, entry)
    value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key)
    })
    return value
  }
}
