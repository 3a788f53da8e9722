import { ArchiveMissingError, type ArchiveStore } from '../../drivers/archives/types'
import type { OffsiteDestination } from '../../drivers/offsite/types'
import { iso, type Clock } from '../../lib/clock'
import type { Logger } from '../../lib/logger'
import type { ArchiveRow, OffsiteCopyRow } from '../../store/schema'
import type { BoxCopies } from './box-copy'
import type { RestoreDrill } from './drill'
import { offsiteKeys } from './manifest'
import { reasonOf, retryAt, type BoxIdentity, type Sealing } from './ports'
import type { OffsiteCopiesRepository } from './repository'
import { boxCopiesToDrop } from './retention'
import { abortable } from './streams'

export interface OffsiteCopierDeps {
  repo: OffsiteCopiesRepository
  destination: OffsiteDestination
  /** The local archives, read as streams. */
  archives: Pick<ArchiveStore, 'read'>
  sealing: Sealing
  /** config `offsite.age_recipients`: the hoster's keys. */
  recipients: readonly string[]
  identity: BoxIdentity
  box: BoxCopies
  drill: RestoreDrill
  clock: Clock
  log: Logger
  /** config `offsite.store_interval_seconds`, in ms. */
  intervalMs: number
  /** config `archives.backups_kept`: days of store copies kept (the newest of each day). */
  keepDays: number
}

/** What one pass did. */
/**
 * A step of `berth offsite push` as it is done, handed to push's `onStep` (a port: the admin
 * socket sends it to the command as a progress line): each archive copy put (its sealed object's
 * key, the archive's bytes, how long), each copy deleted, and the store copied with its manifest.
 * A copy that fails is no step: it is among the result's failures, as before.
 */
export type OffsiteStep =
  | { step: 'copy_sent'; key: string; bytes: number; ms: number }
  | { step: 'copy_deleted'; key: string }
  | { step: 'store_copied'; manifest: string | null; ms: number }

export interface PassResult {
  copied: number
  deleted: number
  /** The manifest written, when the store was copied. */
  manifest: string | null
  /** Each copy that failed, with why. */
  failures: { key: string; error: string }[]
}

/** Copies tried in one pass before the pass ends (the next one goes on). */
const ROWS_PER_PASS = 1000
const STOPPING = 'Berth is stopping; the copy is made again at its next start'
/** How often what interrupted uploads left at the destination is swept (OffsiteDestination.sweep). */
const SWEEP_MS = 60 * 60_000

/**
 * Sends copies off the box and keeps them in line with the box (issue 25; docs/operations.md,
 * "Copies off the box"). Every copy is a row of the store first (OffsiteCopiesRepository), then
 * an object: a pass puts what is pending and deletes what is let go, one at a time, each sealed
 * for the hoster's keys and the box's own. A failure never blocks anything else: the row waits
 * with its reason, tried again after 30 s, then twice as long each time up to an hour.
 *
 * What a pass does, in order: queue the copies of ready archives that have none, and let go
 * those whose archive is gone (so a crash between an archive's change and its hook loses
 * nothing); copy the store (with the tls folder and a manifest) when due; let go the store copies
 * retention no longer keeps; put and delete what is due; log an error when the last store copy is
 * older than three intervals; sweep what interrupted uploads left (hourly); run the restore drill
 * once a day.
 */
export class OffsiteCopier {
  private running: Promise<PassResult> | null = null
  private again = false
  private stopping = false
  private current: AbortController | null = null
  private sweptAt = 0
  private readonly startedAt: number

  constructor(private d: OffsiteCopierDeps) {
    this.startedAt = d.clock.now()
  }

  /** An archive turned ready: its copy is queued and a pass started. Never throws. */
  archiveReady(row: Pick<ArchiveRow, 'id' | 'storageKey' | 'createdAt' | 'completedAt'>): void {
    try {
      if (!row.storageKey) return
      const now = this.d.clock.now()
      this.d.repo.queueArchive({ id: row.id, storageKey: row.storageKey, madeAt: row.completedAt ?? row.createdAt }, offsiteKeys.archive(row.storageKey), now)
      this.kick()
    } catch (err) {
      this.d.log.error('could not queue the copy of an archive; the next pass will', { archive: row.id, error: reasonOf(err) })
    }
  }

  /** An archive is removed locally: its copy off the box is deleted too (queued). Never throws. */
  archiveDiscarded(row: Pick<ArchiveRow, 'id'>): void {
    try {
      this.d.repo.releaseArchive(row.id, this.d.clock.now())
      this.kick()
    } catch (err) {
      this.d.log.error('could not queue the deletion of an archive\'s copy; the next pass will', { archive: row.id, error: reasonOf(err) })
    }
  }

  /** Starts a pass in the background unless one runs (then another follows it). Never throws. */
  kick(): void {
    if (this.stopping) return
    if (this.running) {
      this.again = true
      return
    }
    void this.runPass({ force: false })
  }

  /** A pass now, after the one running (if any); what it did. */
  async runNow(): Promise<PassResult> {
    await this.idle()
    return this.runPass({ force: false })
  }

  /** Resolves once no pass runs (nor one that was asked for meanwhile). */
  async idle(): Promise<void> {
    while (this.running) await this.running.catch(() => {})
  }

  /**
   * Copy now (`berth offsite push`): every pending copy and deletion whatever its retry time,
   * then a fresh store copy and manifest. Waits for a pass already running first.
   */
  async push(onStep: (step: OffsiteStep) => void = () => {}): Promise<PassResult> {
    await this.idle()
    return this.runPass({ force: true, onStep })
  }

  /**
   * At shutdown: the copy in flight is cut short (it is made again at the next start), then one
   * last store copy, given up after `boundMs` with a log line (its put goes on until the process
   * exits; an unfinished put is never a copy).
   */
  async stop(boundMs: number): Promise<void> {
    this.stopping = true
    this.current?.abort(new Error(STOPPING))
    let timer: ReturnType<typeof setTimeout> | undefined
    const gaveUp = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), boundMs)))
    const last = (async () => {
      await this.running?.catch(() => {})
      await this.d.box.copy(await this.recipients())
    })()
    try {
      if (await Promise.race([last, gaveUp]) === 'timeout') this.d.log.error(`the store copy at shutdown did not finish within ${boundMs / 1000} s; Berth stops without it (the last copy off the box is older)`, { destination: this.d.destination.describe })
    } catch (err) {
      this.d.log.error('the store copy at shutdown failed; Berth stops without it', { destination: this.d.destination.describe, error: reasonOf(err) })
    } finally {
      clearTimeout(timer)
      // Given up on: it may still fail later (the store closed under it), which no one awaits.
      last.catch(() => {})
    }
  }

  private runPass(opts: PassOptions): Promise<PassResult> {
    const pass = this.pass(opts).finally(() => {
      this.running = null
      if (this.again && !this.stopping) {
        this.again = false
        this.kick()
      }
    })
    this.running = pass
    return pass
  }

  private async pass({ force, onStep }: PassOptions): Promise<PassResult> {
    const result: PassResult = { copied: 0, deleted: 0, manifest: null, failures: [] }
    try {
      const now = this.d.clock.now()
      this.reconcile(now)
      const recipients = await this.recipients()
      if (!force && this.d.box.due(now)) await this.copyBox(recipients, result)
      this.prune()
      const tried = new Set<string>()
      for (let n = 0; n < ROWS_PER_PASS && !this.stopping; n++) {
        const row = this.d.repo.due(force ? Number.MAX_SAFE_INTEGER : this.d.clock.now(), tried.size + 1).find((r) => !tried.has(r.id))
        if (!row) break
        tried.add(row.id)
        if (row.status === 'deleting') await this.deleteCopy(row, result, onStep)
        else await this.copyArchive(row, recipients, result, onStep)
        if (!force && !this.stopping && this.d.box.due(this.d.clock.now())) await this.copyBox(recipients, result)
      }
      if (force) {
        const boxStarted = this.d.clock.now()
        await this.copyBox(recipients, result)
        if (!result.failures.some((f) => f.key === 'store')) onStep?.({ step: 'store_copied', manifest: result.manifest, ms: this.d.clock.now() - boxStarted })
      }
      this.checkAge()
      if (!this.stopping && this.d.clock.now() - this.sweptAt >= SWEEP_MS) {
        this.sweptAt = this.d.clock.now()
        await this.d.destination.sweep()
      }
      if (!force && !this.stopping && this.d.drill.due(this.d.clock.now())) await this.d.drill.run()
    } catch (err) {
      result.failures.push({ key: '', error: reasonOf(err) })
      this.d.log.error('the off-box copy pass failed', { error: reasonOf(err) })
    }
    return result
  }

  /** Queues what the hooks missed, and lets go the copies of archives that are gone. */
  private reconcile(now: number): void {
    for (const a of this.d.repo.archivesWithoutCopy()) this.d.repo.queueArchive(a, offsiteKeys.archive(a.storageKey), now)
    this.d.repo.releaseOrphanedArchives(now)
  }

  private async copyBox(recipients: readonly string[], result: PassResult): Promise<void> {
    try {
      result.manifest = await this.d.box.copy(recipients)
    } catch (err) {
      result.failures.push({ key: 'store', error: reasonOf(err) })
      this.d.log.warn('the store could not be copied off the box; tried again later', { destination: this.d.destination.describe, error: reasonOf(err) })
    }
  }

  /** Lets go the store, tls and manifest copies retention does not keep. */
  private prune(): void {
    const drop = boxCopiesToDrop(this.d.repo.boxCopies(['copied']), this.d.clock.now(), this.d.keepDays)
    this.d.repo.release(drop, this.d.clock.now())
  }

  private async copyArchive(row: OffsiteCopyRow, recipients: readonly string[], result: PassResult, onStep?: (step: OffsiteStep) => void): Promise<void> {
    const abort = new AbortController()
    this.current = abort
    const started = this.d.clock.now()
    try {
      const source = await this.d.archives.read(storageKeyOf(row.key))
      const sealed = await this.d.sealing.seal(abortable(source.stream, abort.signal), recipients)
      // age adds 16 bytes per 64 KiB chunk and a header of well under 64 KiB.
      await this.d.destination.put(row.key, sealed.stream, { expectedBytes: Math.ceil(source.sizeBytes * 1.001) + 65_536 })
      const plain = await sealed.plain
      if (this.d.repo.markCopied(row.id, { ...plain, at: this.d.clock.now() })) {
        result.copied++
        onStep?.({ step: 'copy_sent', key: row.key, bytes: plain.bytes, ms: this.d.clock.now() - started })
      }
      this.d.log.info('copied an archive off the box', { key: row.key, archive: row.archiveId, bytes: plain.bytes, ms: this.d.clock.now() - started })
    } catch (err) {
      abort.abort(err)
      if (err instanceof ArchiveMissingError) {
        // Removed locally while it waited: its copy (if any) goes too.
        this.d.repo.release([row.id], this.d.clock.now())
      } else if (!this.stopping) {
        this.failed(row, err, result)
      }
    } finally {
      this.current = null
    }
  }

  private async deleteCopy(row: OffsiteCopyRow, result: PassResult, onStep?: (step: OffsiteStep) => void): Promise<void> {
    try {
      await this.d.destination.delete(row.key)
      this.d.repo.remove(row.id)
      result.deleted++
      onStep?.({ step: 'copy_deleted', key: row.key })
    } catch (err) {
      this.failed(row, err, result)
    }
  }

  private failed(row: OffsiteCopyRow, err: unknown, result: PassResult): void {
    const now = this.d.clock.now()
    const next = retryAt(now, row.attempts + 1)
    this.d.repo.markFailed(row.id, reasonOf(err), now, next)
    result.failures.push({ key: row.key, error: reasonOf(err) })
    this.d.log.warn(row.status === 'deleting' ? 'a copy off the box could not be deleted; tried again later' : 'an archive could not be copied off the box; tried again later', { key: row.key, attempts: row.attempts + 1, next_attempt_at: iso(next), error: reasonOf(err) })
  }

  /** An error line each pass while the last store copy is older than three intervals. */
  private checkAge(): void {
    const now = this.d.clock.now()
    const last = this.d.repo.newest('store', ['copied'])
    const since = last?.madeAt ?? this.startedAt
    if (now - since <= 3 * this.d.intervalMs) return
    const failure = this.d.repo.lastFailure()
    this.d.log.error(last ? 'the last store copy off the box is older than three intervals' : 'no store copy off the box yet, three intervals after start', {
      last_store_copy_at: last ? iso(last.madeAt) : null, age_seconds: last ? Math.round((now - last.madeAt) / 1000) : null,
      destination: this.d.destination.describe, last_error: failure?.lastError ?? null,
    })
  }

  private async recipients(): Promise<string[]> {
    return [...this.d.recipients, await this.d.identity.recipient()]
  }
}

interface PassOptions {
  force: boolean
  /** push's: where its steps go. */
  onStep?: (step: OffsiteStep) => void
}

/** The local archive's key of an archive copy's key (`archives/{storage_key}.age`). */
function storageKeyOf(key: string): string {
  return key.replace(/^archives\//, '').replace(/\.age$/, '')
}
