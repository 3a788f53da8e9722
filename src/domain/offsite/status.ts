import { iso } from '../../lib/clock'
import type { Store } from '../../store/store'
import { OffsiteCopiesRepository } from './repository'

/** How the copies off the box stand: `berth offsite status`, and in part GET /status/. */
export interface OffsiteStatus {
  enabled: boolean
  /** `offsite.url` (never credentials), or null when copies are off. */
  destination: string | null
  store_interval_seconds: number
  /**
   * The public half of the key the box signs its manifests with (`ed25519:...`): keep it off the
   * box; `berth restore --signing-key` needs it. Null while copies are off and none was made.
   */
  signing_key: string | null
  last_store_copy: { key: string; made_at: string; age_seconds: number; bytes: number | null } | null
  /** The last store copy is older than three intervals (or there is none while copies are on). */
  stale: boolean
  last_manifest: { key: string; made_at: string } | null
  /** Copies waiting: to put (`pending`) and to delete (`deleting`), by kind. */
  archives: { pending: number; deleting: number }
  others: { pending: number; deleting: number }
  /** The latest failure of a copy that still waits; null when nothing waits on a failure. */
  last_error: { key: string; kind: string; at: string | null; attempts: number; next_attempt_at: string; message: string } | null
  /** The last restore drill: the archive copy it read back, when, and what it found. */
  last_drill: { key: string; archive_id: string | null; at: string; ok: boolean; error: string | null } | null
}

/** Reads the state of the copies from the store (any process may: `berth offsite status` does). */
export function offsiteStatus(repo: OffsiteCopiesRepository, o: { now: number; destination: string | null; intervalSeconds: number; signingKey?: string | null }): OffsiteStatus {
  const store = repo.newest('store', ['copied'])
  const manifest = repo.newest('manifest', ['copied'])
  const waiting = repo.waiting()
  const count = (archive: boolean, status: 'pending' | 'deleting') =>
    waiting.filter((w) => (w.kind === 'archive') === archive && w.status === status).reduce((n, w) => n + w.n, 0)
  const failure = repo.lastFailure()
  const drill = repo.lastDrilled()
  const ageSeconds = store ? Math.max(0, Math.round((o.now - store.madeAt) / 1000)) : null
  return {
    enabled: o.destination !== null,
    destination: o.destination,
    store_interval_seconds: o.intervalSeconds,
    signing_key: o.signingKey ?? null,
    last_store_copy: store ? { key: store.key, made_at: iso(store.madeAt), age_seconds: ageSeconds!, bytes: store.bytes } : null,
    stale: o.destination !== null && (ageSeconds === null || ageSeconds > 3 * o.intervalSeconds),
    last_manifest: manifest ? { key: manifest.key, made_at: iso(manifest.madeAt) } : null,
    archives: { pending: count(true, 'pending'), deleting: count(true, 'deleting') },
    others: { pending: count(false, 'pending'), deleting: count(false, 'deleting') },
    last_error: failure ? {
      key: failure.key, kind: failure.kind, at: failure.attemptedAt === null ? null : iso(failure.attemptedAt), attempts: failure.attempts,
      next_attempt_at: iso(failure.nextAttemptAt), message: failure.lastError!,
    } : null,
    last_drill: drill ? { key: drill.key, archive_id: drill.archiveId, at: iso(drill.verifiedAt!), ok: drill.verifyError === null, error: drill.verifyError } : null,
  }
}

/** The age in seconds of the last store copy off the box, or null when there is none (GET /status/). */
export function lastStoreCopyAgeSeconds(repo: Pick<OffsiteCopiesRepository, 'newest'>, now: number): number | null {
  const store = repo.newest('store', ['copied'])
  return store ? Math.max(0, Math.round((now - store.madeAt) / 1000)) : null
}

/** offsiteStatus over the copies listed in `store`: for `berth offsite status` with no server running, which opens the store itself. */
export function offsiteStatusIn(store: Store, o: Parameters<typeof offsiteStatus>[1]): OffsiteStatus {
  return offsiteStatus(new OffsiteCopiesRepository(store), o)
}
