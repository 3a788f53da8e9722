import type { Clock } from '../lib/clock'
import type { Logger } from '../lib/logger'
import type { JobRow } from '../store/schema'
import type { Store } from '../store/store'
import { JobsRepository } from './repository'

export interface JobHandler {
  /** Does the work. Must be idempotent: a crash can make it run again from the start. */
  run(subjectId: string): Promise<void>
  /** Called once when the last attempt failed. */
  failed(subjectId: string, error: string): Promise<void>
  /** Attempts before giving up (default 3). */
  attempts?: number
}

const RETRY_DELAYS_MS = [1_000, 5_000, 15_000]

export interface JobRunnerOptions {
  /** Jobs run at once; default 8. */
  concurrency?: number
}

/**
 * Runs slow work in the background with its state in the store, so the request that started it
 * returns at once and a `kill -9` loses nothing: on start, jobs left `running` are queued again.
 * Only `berth serve` runs jobs (the admin commands ask it over its admin socket), so a job marked
 * running is either this process's or one its previous run left behind.
 */
export class JobRunner {
  private active = new Set<string>()
  /** Subjects of the jobs running in this process (execute and runHere), with how many of each. */
  private timer: ReturnType<typeof setTimeout> | undefined
  private stopped = false
  private idle: (() => void)[] = []
  private repo: JobsRepository

  constructor(
    private store: Store,
    private clock: Clock,
    private log: Logger,
    private handlers: Record<string, JobHandler>,
    opts: JobRunnerOptions = {},
  ) {
    this.repo = new JobsRepository(store)
    this.concurrency = opts.concurrency ?? 8
  }

  private concurrency: number

  /**
   * Adds the handlers of more job kinds: the composition root builds each area (sites, names) with
   * the runner it enqueues on, then registers that area's jobs. Registered before `start()`.
   */
  register(handlers: Record<string, JobHandler>): void {
    for (const [kind, handler] of Object.entries(handlers)) {
      if (this.handlers[kind]) throw new Error(`Job handler for '${kind}' registered twice`)
      this.handlers[kind] = handler
    }
  }

  /** Records a job; call inside the transaction that creates its subject, then `kick()`. */
  enqueue(kind: string, subjectId: string): JobRow {
    if (!this.handlers[kind]) throw new Error(`No job handler for '${kind}'`)
    const now = this.clock.now()
    return this.store.write(() => this.repo.insert(kind, subjectId, now))
  }

  /**
   * Runs `work` (by default the handler of `kind` on `subjectId`) here and now, recorded as a
   * running job of `kind` while it runs: for work a caller does itself and waits for (the node
   * operations: a move's or an evacuation's restore), so that it is seen under way (an archive
   * with a running job is not stranded: the sweeps leave it and its work files alone). `work` may do more than the handler around it (claim the
   * subject first, prepare what it needs), as long as what is left undone if the process dies is
   * what the handler alone finishes: a `kill -9` leaves the row running, and the next start
   * queues it again and its handler finishes the work. The row ends succeeded, or failed with
   * the error, which is thrown: the caller handles the failure (no retry, no failure handler here).
   */
  async runHere(kind: string, subjectId: string, work?: () => Promise<void>): Promise<void> {
    const handler = this.handlers[kind]
    if (!handler) throw new Error(`No job handler for '${kind}'`)
    const now = this.clock.now()
    const job = this.store.write(() => {
      const row = this.repo.insert(kind, subjectId, now)
      this.repo.update(row.id, { status: 'running', attempts: 1, updatedAt: now })
      return row
    })
    try {
      await (work ?? (() => handler.run(subjectId)))()
      this.setState(job.id, { status: 'succeeded', error: null })
    } catch (err) {
      this.setState(job.id, { status: 'failed', error: (err as Error).message })
      throw err
    }
  }

  /** The kind of the oldest queued or running job of `subjectId` among `kinds`, or null. */
  pendingOf(subjectId: string, kinds: readonly string[]): string | null {
    return this.repo.oldestPendingKind(subjectId, kinds)
  }

  /**
   * `pendingOf` for many subjects in one query (list views): each subject's oldest queued or
   * running job among `kinds`; subjects with none are absent.
   */
  pendingFor(subjectIds: string[], kinds: readonly string[]): Map<string, string> {
    const out = new Map<string, string>()
    if (subjectIds.length === 0) return out
    for (const r of this.repo.pendingOf(subjectIds, kinds)) {
      if (!out.has(r.subjectId)) out.set(r.subjectId, r.kind)
    }
    return out
  }

  /**
   * Re-queues the jobs a previous run left running (it was stopped or killed in the middle: each
   * handler is idempotent and finishes the work), then starts working.
   */
  start(): void {
    this.stopped = false
    this.resume()
    this.kick()
  }

  private resume(): number {
    const requeued = this.store.write(() => this.repo.requeueRunning(this.clock.now()))
    if (requeued.length > 0) this.log.warn('resuming jobs interrupted by a stop', { jobs: requeued.map((j) => `${j.kind}:${j.subjectId}`) })
    return requeued.length
  }

  /** Looks for due jobs now. */
  kick(): void {
    if (this.stopped) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => this.pump(), 0)
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    if (this.active.size > 0) await new Promise<void>((resolve) => this.idle.push(resolve))
  }

  /** Resolves when no job is running or due; for tests and benchmarks. */
  async drain(): Promise<void> {
    while (this.active.size > 0 || this.due(1).length > 0) await Bun.sleep(10)
  }

  private due(limit: number): JobRow[] {
    return this.repo.due(this.clock.now(), limit)
  }

  private pump(): void {
    if (this.stopped) return
    const free = this.concurrency - this.active.size
    if (free <= 0) return
    for (const job of this.due(free + this.active.size).filter((j) => !this.active.has(j.id)).slice(0, free)) {
      this.active.add(job.id)
      void this.execute(job).finally(() => {
        this.active.delete(job.id)
        if (this.active.size === 0) this.idle.splice(0).forEach((r) => r())
        this.kick()
      })
    }
    const next = this.repo.nextDue()
    if (next !== null && this.active.size < this.concurrency) {
      clearTimeout(this.timer)
      this.timer = setTimeout(() => this.pump(), Math.max(10, next - this.clock.now()))
    }
  }

  private async execute(job: JobRow): Promise<void> {
    const handler = this.handlers[job.kind]
    const attempt = job.attempts + 1
    this.setState(job.id, { status: 'running', attempts: attempt })
    try {
      await handler.run(job.subjectId)
      this.setState(job.id, { status: 'succeeded', error: null })
    } catch (err) {
      const message = (err as Error).message
      const max = handler.attempts ?? 3
      if (attempt < max) {
        const delay = RETRY_DELAYS_MS[Math.min(attempt - 1, RETRY_DELAYS_MS.length - 1)]
        this.log.warn('job failed; will retry', { job: job.id, kind: job.kind, subject: job.subjectId, attempt, error: message })
        this.setState(job.id, { status: 'queued', error: message, runAfter: this.clock.now() + delay })
      } else {
        this.log.error('job failed for good', { job: job.id, kind: job.kind, subject: job.subjectId, attempt, error: message })
        this.setState(job.id, { status: 'failed', error: message })
        await handler.failed(job.subjectId, message).catch((e) => this.log.error('job failure handler failed', { job: job.id, error: (e as Error).message }))
      }
    }
  }

  private setState(id: string, changes: Partial<JobRow>) {
    this.store.write(() => {
      this.repo.update(id, { ...changes, updatedAt: this.clock.now() })
    })
  }
}
