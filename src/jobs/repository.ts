import { and, asc, eq, inArray, lte } from 'drizzle-orm'
import { jobs, type JobRow } from '../store/schema'
import { onFirstUse } from '../store/prepared'
import type { Store } from '../store/store'

/** The job queue's table (`jobs`): what the JobRunner records, finds due and updates. */
export class JobsRepository {
  constructor(private store: Store) {}

  /** Read for every list of site views (`pendingFor`): prepared once (src/store/prepared.ts). */
  private pendingOfSubjects = onFirstUse(() => this.store.sqlite.prepare<{ subjectId: string; kind: string }, [string, string]>(`
    SELECT subject_id AS subjectId, kind FROM jobs
    WHERE subject_id IN (SELECT value FROM json_each(?)) AND kind IN (SELECT value FROM json_each(?)) AND status IN ('queued', 'running')
    ORDER BY created_at, rowid`))

  /** A queued job of `kind` for `subjectId`, due at `now`. */
  insert(kind: string, subjectId: string, now: number): JobRow {
    return this.store.db.insert(jobs).values({ id: crypto.randomUUID(), kind, subjectId, status: 'queued', runAfter: now, createdAt: now, updatedAt: now }).returning().get()
  }

  /** The kind of the oldest queued or running job of `subjectId` among `kinds`, or null. */
  oldestPendingKind(subjectId: string, kinds: readonly string[]): string | null {
    const row = this.store.db.select({ kind: jobs.kind }).from(jobs)
      .where(and(eq(jobs.subjectId, subjectId), inArray(jobs.kind, [...kinds]), inArray(jobs.status, ['queued', 'running'])))
      .orderBy(asc(jobs.createdAt)).limit(1).get()
    return row?.kind ?? null
  }

  /** The queued or running jobs of `subjectIds` among `kinds`, oldest first, in one read. */
  pendingOf(subjectIds: string[], kinds: readonly string[]): { subjectId: string; kind: string }[] {
    return this.pendingOfSubjects().all(JSON.stringify(subjectIds), JSON.stringify(kinds))
  }

  /** Queues again every job marked running (a previous run of berth serve left them so); returns them. */
  requeueRunning(now: number): JobRow[] {
    return this.store.db.update(jobs).set({ status: 'queued', updatedAt: now }).where(eq(jobs.status, 'running')).returning().all()
  }

  /** Up to `limit` queued jobs due at `now`, soonest first. */
  due(now: number, limit: number): JobRow[] {
    return this.store.db.select().from(jobs)
      .where(and(eq(jobs.status, 'queued'), lte(jobs.runAfter, now)))
      .orderBy(asc(jobs.runAfter)).limit(limit).all()
  }

  /** When the soonest queued job is due, or null when none is queued. */
  nextDue(): number | null {
    return this.store.db.select({ at: jobs.runAfter }).from(jobs).where(inArray(jobs.status, ['queued'])).orderBy(asc(jobs.runAfter)).limit(1).get()?.at ?? null
  }

  update(id: string, changes: Partial<JobRow>): void {
    this.store.db.update(jobs).set(changes).where(eq(jobs.id, id)).run()
  }
}
