import { and, desc, eq, inArray, isNotNull, isNull, notInArray, sql } from 'drizzle-orm'
import { deployments, type DeploymentRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { AppRuntime, DeploymentStatus } from '../../core/enums'

/** Deployment records; the deploy job moves them from queued to running to succeeded or failed. */
export class DeploymentsRepository {
  private finishWatchers: ((row: DeploymentRow) => void)[] = []

  constructor(private store: Store) {}

  /** Calls `watcher` with the finished row inside the transaction of each `finish` (the event log records there). */
  onFinished(watcher: (row: DeploymentRow) => void): void {
    this.finishWatchers.push(watcher)
  }

  /** A queued deployment; a rollback names the deployment it puts back and that one's archive. */
  insert(row: { id: string; siteId: string; createdAt: number; rollbackOf?: string; archiveId?: string; source?: string; runtime?: AppRuntime | null }): DeploymentRow {
    return this.store.write(() => this.store.db.insert(deployments).values({ ...row, status: 'queued' }).returning().get())
  }

  find(id: string): DeploymentRow | undefined {
    return this.store.db.select().from(deployments).where(eq(deployments.id, id)).get()
  }

  findForSite(siteId: string, id: string): DeploymentRow | undefined {
    return this.store.db.select().from(deployments).where(and(eq(deployments.siteId, siteId), eq(deployments.id, id))).get()
  }

  /** The site's deploy (not a rollback) that has not started yet, if any. */
  findQueued(siteId: string): DeploymentRow | undefined {
    return this.store.db.select().from(deployments).where(and(eq(deployments.siteId, siteId), eq(deployments.status, 'queued'), isNull(deployments.rollbackOf))).get()
  }

  /** The site's deployment (a deploy, a source's or a rollback) queued or running, if any: the oldest. */
  findUnfinished(siteId: string): DeploymentRow | undefined {
    return this.store.db.select().from(deployments).where(and(eq(deployments.siteId, siteId), inArray(deployments.status, ['queued', 'running']))).orderBy(deployments.createdAt).get()
  }

  /** Records the archive of the files the deployment put in place. */
  setArchive(id: string, archiveId: string): void {
    this.store.write(() => {
      this.store.db.update(deployments).set({ archiveId }).where(eq(deployments.id, id)).run()
    })
  }

  /**
   * Forgets the archives of the site's deployments past the newest `keep` (they can no longer be
   * rolled back to) and returns the ids of the archives its deployments still name.
   */
  keepArchivesOfNewest(siteId: string, keep: number): Set<string> {
    return this.store.write(() => {
      const newest = this.store.db.select({ id: deployments.id }).from(deployments).where(eq(deployments.siteId, siteId))
        .orderBy(desc(deployments.createdAt), desc(sql`rowid`)).limit(keep).all().map((r) => r.id)
      this.store.db.update(deployments).set({ archiveId: null })
        .where(and(eq(deployments.siteId, siteId), isNotNull(deployments.archiveId), notInArray(deployments.id, newest))).run()
      const named = this.store.db.select({ archiveId: deployments.archiveId }).from(deployments)
        .where(and(eq(deployments.siteId, siteId), isNotNull(deployments.archiveId))).all()
      return new Set(named.map((r) => r.archiveId!))
    })
  }

  /**
   * The deployments whose releases an app site keeps (issue 39): its newest `keep` that built one
   * (a source, succeeded), newest first. A rollback can switch back to these.
   */
  releasesOf(siteId: string, keep: number): string[] {
    return this.store.db.select({ id: deployments.id }).from(deployments)
      .where(and(eq(deployments.siteId, siteId), eq(deployments.status, 'succeeded'), isNotNull(deployments.source)))
      .orderBy(desc(deployments.createdAt), desc(sql`rowid`)).limit(keep).all().map((r) => r.id)
  }

  /** What a deployment built: its runtime, and the commit of a git source. */
  setBuilt(id: string, built: { runtime: AppRuntime; commit: string | null }): void {
    this.store.write(() => {
      this.store.db.update(deployments).set({ runtime: built.runtime, ...(built.commit ? { commit: built.commit } : {}) }).where(eq(deployments.id, id)).run()
    })
  }

  /** Newest first. */
  listForSite(siteId: string, limit: number): DeploymentRow[] {
    return this.store.db.select().from(deployments).where(eq(deployments.siteId, siteId))
      .orderBy(desc(deployments.createdAt), desc(sql`rowid`)).limit(limit).all()
  }

  start(id: string, at: number): void {
    this.store.write(() => {
      this.store.db.update(deployments).set({ status: 'running', startedAt: at }).where(eq(deployments.id, id)).run()
    })
  }

  finish(id: string, outcome: { status: Extract<DeploymentStatus, 'succeeded' | 'failed'>; output: string; error: string | null; at: number }): void {
    this.store.write(() => {
      const row = this.store.db.update(deployments).set({ status: outcome.status, output: outcome.output, error: outcome.error, finishedAt: outcome.at }).where(eq(deployments.id, id)).returning().get()
      if (row) for (const watcher of this.finishWatchers) watcher(row)
    })
  }

  /** Deletes the site's finished deployments beyond the newest `keep`. */
  prune(siteId: string, keep: number): void {
    this.store.write(() => {
      const kept = this.store.db.select({ id: deployments.id }).from(deployments).where(eq(deployments.siteId, siteId))
        .orderBy(desc(deployments.createdAt), desc(sql`rowid`)).limit(keep).all().map((r) => r.id)
      this.store.db.delete(deployments).where(and(
        eq(deployments.siteId, siteId),
        inArray(deployments.status, ['succeeded', 'failed']),
        notInArray(deployments.id, kept),
      )).run()
    })
  }
}
