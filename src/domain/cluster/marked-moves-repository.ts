import type { Store } from '../../store/store'
import { onFirstUse } from '../../store/prepared'
import { MOVE_SITE_JOB } from './site-transfer'

/**
 * The slugs of the sites being switched to another node right now: those with a MOVE_SITE_JOB
 * queued or running (site-transfer.ts). Read again only when the jobs area moved, so the edge
 * asks it on every request of a serving site for the price of a version check.
 */
export class MarkedMoves {
  private version: () => number
  private seen = -1
  private current: ReadonlySet<string> = new Set()
  private read = onFirstUse(() => this.store.sqlite.prepare<{ slug: string }, [string]>(`
    SELECT s.slug AS slug FROM jobs j JOIN sites s ON s.id = j.subject_id
    WHERE j.kind = ? AND j.status IN ('queued', 'running') AND s.status <> 'deleted'`))

  constructor(private store: Pick<Store, 'sqlite' | 'versionOf'>) {
    this.version = store.versionOf(['jobs'])
  }

  slugs(): ReadonlySet<string> {
    const now = this.version()
    if (now !== this.seen) {
      const rows = this.read().all(MOVE_SITE_JOB)
      this.current = rows.length === 0 && this.current.size === 0 ? this.current : new Set(rows.map((r) => r.slug))
      this.seen = now
    }
    return this.current
  }

  /** Moves whenever `slugs()` may have changed. */
  generation(): number {
    return this.version()
  }
}
