import { and, asc, desc, eq, inArray, ne, sql } from 'drizzle-orm'
import { archives, jobs, type ArchiveRow } from '../../store/schema'
import type { Store } from '../../store/store'
import type { ArchiveRecords, ArchiveKind, ArchiveStatus } from './records'

export type { ArchiveKind, ArchiveStatus } from './records'


/** Archive rows: what the API lists; the bytes are in the archive store under `storageKey`. */
export class ArchivesRepository implements ArchiveRecords {
  private watchers: ((before: ArchiveRow, after: ArchiveRow) => void)[] = []

  constructor(private store: Store) {}

  /** Calls `watcher` inside the transaction of every `transition` that happened, with the row before and after (the event log records there). */
  onTransition(watcher: (before: ArchiveRow, after: ArchiveRow) => void): void {
    this.watchers.push(watcher)
  }

  insert(row: { id: string; siteId: string; kind: ArchiveKind; storageKey: string; createdAt: number }): ArchiveRow {
    return this.store.write(() => this.store.db.insert(archives).values({ ...row, status: 'creating' }).returning().get())
  }

  find(id: string): ArchiveRow | undefined {
    return this.store.db.select().from(archives).where(eq(archives.id, id)).get()
  }

  /** The archive of this site and kind, unless deleted. */
  findOf(siteId: string, kind: ArchiveKind, id: string): ArchiveRow | undefined {
    return this.store.db.select().from(archives)
      .where(and(eq(archives.id, id), eq(archives.siteId, siteId), eq(archives.kind, kind), ne(archives.status, 'deleted'))).get()
  }

  /** Newest first; deleted ones left out. */
  listOf(siteId: string, kind: ArchiveKind): ArchiveRow[] {
    return this.store.db.select().from(archives)
      .where(and(eq(archives.siteId, siteId), eq(archives.kind, kind), ne(archives.status, 'deleted')))
      .orderBy(desc(archives.createdAt), desc(sql`rowid`)).all()
  }

  countWithStatus(siteId: string, kind: ArchiveKind, statuses: ArchiveStatus[]): number {
    return this.store.db.select({ n: sql<number>`count(*)` }).from(archives)
      .where(and(eq(archives.siteId, siteId), eq(archives.kind, kind), inArray(archives.status, statuses))).get()!.n
  }

  /** The archive being restored onto the site, if any (at most one: restore() refuses a second). */
  restoringOf(siteId: string): ArchiveRow | undefined {
    return this.store.db.select().from(archives).where(and(eq(archives.siteId, siteId), eq(archives.status, 'restoring'))).get()
  }

  /** Every archive of the site, whatever its status. */
  allOf(siteId: string): ArchiveRow[] {
    return this.store.db.select().from(archives).where(eq(archives.siteId, siteId)).all()
  }

  /** Per site, the creation time of its newest backup with each status (deleted ones left out). */
  newestBackups(): { siteId: string; status: string; newest: number }[] {
    return this.store.db.select({ siteId: archives.siteId, status: archives.status, newest: sql<number>`max(${archives.createdAt})` })
      .from(archives).where(and(eq(archives.kind, 'backup'), ne(archives.status, 'deleted')))
      .groupBy(archives.siteId, archives.status).all()
  }

  /** Rows with one of `statuses`, oldest first. */
  withStatus(statuses: ArchiveStatus[], kind?: ArchiveKind): ArchiveRow[] {
    const where = kind ? and(inArray(archives.status, statuses), eq(archives.kind, kind)) : inArray(archives.status, statuses)
    return this.store.db.select().from(archives).where(where).orderBy(asc(archives.createdAt)).all()
  }

  /** Sets fields when the row still has status `from`; true when it did. */
  transition(id: string, from: ArchiveStatus[], changes: Partial<Omit<ArchiveRow, 'id' | 'siteId' | 'kind' | 'status'>> & { status: ArchiveStatus }): boolean {
    return this.store.write(() => {
      const before = this.watchers.length > 0 ? this.find(id) : undefined
      const row = this.store.db.update(archives).set(changes).where(and(eq(archives.id, id), inArray(archives.status, from))).returning().get()
      if (row && before) for (const watcher of this.watchers) watcher(before, row)
      return row !== undefined
    })
  }

  /** How many archives of `kind` have one of `statuses`, over every site. */
  countAll(kind: ArchiveKind, statuses: ArchiveStatus[]): number {
    return this.store.db.select({ n: sql<number>`count(*)` }).from(archives)
      .where(and(eq(archives.kind, kind), inArray(archives.status, statuses))).get()!.n
  }

  /**
   * Archives `creating` or `restoring` that no queued or running job will move on: their job
   * failed for good and the process stopped before its failure handler ran. Deployments' archives
   * are left out: the deploy job (subject: the deployment) settles them (domain/deployments).
   */
  stranded(): ArchiveRow[] {
    return this.store.db.select().from(archives)
      .where(and(
        inArray(archives.status, ['creating', 'restoring']),
        ne(archives.kind, 'deployment'),
        sql`not exists (select 1 from ${jobs} where ${jobs.subjectId} = ${archives.id} and ${jobs.status} in ('queued', 'running'))`,
      )).all()
  }

  remove(id: string): void {
    this.store.write(() => {
      this.store.db.delete(archives).where(eq(archives.id, id)).run()
    })
  }
}
