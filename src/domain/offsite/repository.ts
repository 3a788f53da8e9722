import { and, asc, desc, eq, inArray, isNotNull, lte, ne, notInArray, or, sql } from 'drizzle-orm'
import type { OffsiteCopyKind } from '../../core/enums'
import { archives, offsiteCopies, settings, sites, type OffsiteCopyRow } from '../../store/schema'
import type { Store } from '../../store/store'

/** A ready archive with its copy off the box, for the manifest. */
export interface CopiedArchive {
  siteId: string
  archiveId: string
  kind: 'backup' | 'snapshot' | 'deployment'
  storageKey: string
  createdAt: number
  key: string
  sha256: string
  bytes: number
}

/** The settings key naming the destination the copies in the store were made to (followDestination). */
export const DESTINATION_SETTING = 'offsite_destination'

/**
 * The copies off the box (store/schema/offsite.ts): the copier's queue and its record of what is
 * there. Every write is one statement or one transaction, so a kill -9 leaves rows a later pass
 * picks up as they are.
 */
export class OffsiteCopiesRepository {
  constructor(private store: Store) {}

  /** A new `pending` copy, due now. Returns the row. */
  insertPending(row: { kind: OffsiteCopyKind; key: string; madeAt: number; now: number; archiveId?: string; attempts?: number }): OffsiteCopyRow {
    return this.store.write(() => this.store.db.insert(offsiteCopies).values({
      id: crypto.randomUUID(), kind: row.kind, key: row.key, archiveId: row.archiveId ?? null, status: 'pending',
      madeAt: row.madeAt, nextAttemptAt: row.now, attempts: row.attempts ?? 0,
    }).returning().get())
  }

  /**
   * Queues the copy of an archive unless it has one already (whatever its status). True when
   * queued.
   */
  queueArchive(archive: { id: string; storageKey: string; madeAt: number }, key: string, now: number): boolean {
    return this.store.write(() => {
      if (this.store.db.select({ id: offsiteCopies.id }).from(offsiteCopies).where(eq(offsiteCopies.archiveId, archive.id)).get()) return false
      this.store.db.insert(offsiteCopies).values({
        id: crypto.randomUUID(), kind: 'archive', key, archiveId: archive.id, status: 'pending', madeAt: archive.madeAt, nextAttemptAt: now,
      }).onConflictDoNothing().run()
      return true
    })
  }

  /**
   * Follows the destination copies go to (`destination` names it: offsite.url, and the S3
   * endpoint's host), kept in the settings under DESTINATION_SETTING. When it is another than the
   * one the copies in the store were made to, none of them is at the new one: every archive copy
   * is pending again, due now (so the backup lists say `local` only until it is), and the rows of
   * the store, tls and manifest copies and of deletions waiting are forgotten (their objects stay
   * at the old destination, which Berth no longer looks after). So the first manifest at the new
   * destination names only what it holds. Returns the previous destination when it changed, with
   * how many archive copies are made again; null otherwise (the first call only records it).
   */
  followDestination(destination: string, now: number): { previous: string; requeued: number } | null {
    return this.store.write(() => {
      const previous = this.store.db.select().from(settings).where(eq(settings.key, DESTINATION_SETTING)).get()?.value ?? null
      if (previous === destination) return null
      this.store.db.insert(settings).values({ key: DESTINATION_SETTING, value: destination })
        .onConflictDoUpdate({ target: settings.key, set: { value: destination } }).run()
      if (previous === null) return null
      this.store.db.delete(offsiteCopies).where(or(ne(offsiteCopies.kind, 'archive'), eq(offsiteCopies.status, 'deleting'))).run()
      const requeued = this.store.db.update(offsiteCopies).set({
        status: 'pending', sha256: null, bytes: null, refs: null, copiedAt: null, attempts: 0, nextAttemptAt: now,
        attemptedAt: null, lastError: null, verifiedAt: null, verifyError: null,
      }).where(eq(offsiteCopies.kind, 'archive')).returning({ id: offsiteCopies.id }).all().length
      return { previous, requeued }
    })
  }

  /** Ready archives (or being restored) that have no copy row: made while copies were off, or queued by no hook (a crash). */
  archivesWithoutCopy(): { id: string; storageKey: string; madeAt: number }[] {
    return this.store.db.select({ id: archives.id, storageKey: archives.storageKey, madeAt: sql<number>`coalesce(${archives.completedAt}, ${archives.createdAt})` })
      .from(archives)
      .where(and(
        inArray(archives.status, ['ready', 'restoring']),
        isNotNull(archives.storageKey),
        sql`not exists (select 1 from ${offsiteCopies} where ${offsiteCopies.archiveId} = ${archives.id})`,
      )).all() as { id: string; storageKey: string; madeAt: number }[]
  }

  /**
   * Marks `deleting` (due now) the copies of archives that are gone or going locally: a row
   * naming an archive that is neither ready nor being restored. Returns how many.
   */
  releaseOrphanedArchives(now: number): number {
    return this.store.write(() => this.store.db.update(offsiteCopies)
      .set({ status: 'deleting', nextAttemptAt: now, attempts: 0, lastError: null })
      .where(and(
        eq(offsiteCopies.kind, 'archive'), ne(offsiteCopies.status, 'deleting'),
        sql`not exists (select 1 from ${archives} where ${archives.id} = ${offsiteCopies.archiveId} and ${archives.status} in ('ready', 'restoring'))`,
      )).returning({ id: offsiteCopies.id }).all().length)
  }

  /** Marks the copy of this archive `deleting` (due now); its local file is being removed. */
  releaseArchive(archiveId: string, now: number): void {
    this.store.write(() => {
      this.store.db.update(offsiteCopies).set({ status: 'deleting', nextAttemptAt: now, attempts: 0, lastError: null })
        .where(and(eq(offsiteCopies.archiveId, archiveId), ne(offsiteCopies.status, 'deleting'))).run()
    })
  }

  /** Marks these copies `deleting` (due now): retention let them go, or a newer attempt replaced them. */
  release(ids: string[], now: number): void {
    if (ids.length === 0) return
    this.store.write(() => {
      this.store.db.update(offsiteCopies).set({ status: 'deleting', nextAttemptAt: now, attempts: 0, lastError: null })
        .where(and(inArray(offsiteCopies.id, ids), ne(offsiteCopies.status, 'deleting'))).run()
    })
  }

  /** Archive copies to put and copies to delete whose time has come, the longest waiting first. */
  due(now: number, limit: number): OffsiteCopyRow[] {
    return this.store.db.select().from(offsiteCopies)
      .where(and(lte(offsiteCopies.nextAttemptAt, now), sql`(${offsiteCopies.status} = 'deleting' or (${offsiteCopies.status} = 'pending' and ${offsiteCopies.kind} = 'archive'))`))
      .orderBy(asc(offsiteCopies.nextAttemptAt)).limit(limit).all()
  }

  find(id: string): OffsiteCopyRow | undefined {
    return this.store.db.select().from(offsiteCopies).where(eq(offsiteCopies.id, id)).get()
  }

  /** Records a finished put; false when the row is no longer pending (released meanwhile). */
  markCopied(id: string, done: { sha256: string; bytes: number; at: number; refs?: string[] }): boolean {
    return this.store.write(() => this.store.db.update(offsiteCopies)
      .set({ status: 'copied', sha256: done.sha256, bytes: done.bytes, copiedAt: done.at, attemptedAt: done.at, lastError: null, refs: done.refs ? JSON.stringify(done.refs) : null })
      .where(and(eq(offsiteCopies.id, id), eq(offsiteCopies.status, 'pending'))).returning({ id: offsiteCopies.id }).get() !== undefined)
  }

  /** Records a failed put or delete: the row waits until `nextAttemptAt`, saying why. */
  markFailed(id: string, error: string, at: number, nextAttemptAt: number): void {
    this.store.write(() => {
      this.store.db.update(offsiteCopies).set({ attempts: sql`${offsiteCopies.attempts} + 1`, attemptedAt: at, lastError: error, nextAttemptAt })
        .where(eq(offsiteCopies.id, id)).run()
    })
  }

  /** Removes a row whose object was deleted. Only a `deleting` row goes. */
  remove(id: string): void {
    this.store.write(() => {
      this.store.db.delete(offsiteCopies).where(and(eq(offsiteCopies.id, id), eq(offsiteCopies.status, 'deleting'))).run()
    })
  }

  /** The newest copy of `kind` with one of `statuses` (by made_at). */
  newest(kind: OffsiteCopyKind, statuses: OffsiteCopyRow['status'][]): OffsiteCopyRow | undefined {
    return this.store.db.select().from(offsiteCopies)
      .where(and(eq(offsiteCopies.kind, kind), inArray(offsiteCopies.status, statuses)))
      .orderBy(desc(offsiteCopies.madeAt), desc(sql`rowid`)).limit(1).get()
  }

  /** Copies of the kinds that are not archives with one of `statuses`, newest first. */
  boxCopies(statuses: OffsiteCopyRow['status'][]): OffsiteCopyRow[] {
    return this.store.db.select().from(offsiteCopies)
      .where(and(ne(offsiteCopies.kind, 'archive'), inArray(offsiteCopies.status, statuses)))
      .orderBy(desc(offsiteCopies.madeAt)).all()
  }

  /** Of these archive ids, those with a copy off the box: one query for a whole list. */
  copiedArchiveIds(archiveIds: string[]): Set<string> {
    if (archiveIds.length === 0) return new Set()
    const rows = this.store.db.select({ id: offsiteCopies.archiveId }).from(offsiteCopies)
      .where(and(eq(offsiteCopies.kind, 'archive'), eq(offsiteCopies.status, 'copied'), inArray(offsiteCopies.archiveId, archiveIds))).all()
    return new Set(rows.map((r) => r.id!))
  }

  /** Every ready archive with a copy off the box, of sites not deleted, newest first. */
  copiedArchives(): CopiedArchive[] {
    return this.store.db.select({
      siteId: archives.siteId, archiveId: archives.id, kind: archives.kind, storageKey: archives.storageKey, createdAt: archives.createdAt,
      key: offsiteCopies.key, sha256: offsiteCopies.sha256, bytes: offsiteCopies.bytes,
    }).from(offsiteCopies)
      .innerJoin(archives, eq(archives.id, offsiteCopies.archiveId))
      .where(and(eq(offsiteCopies.kind, 'archive'), eq(offsiteCopies.status, 'copied'), inArray(archives.status, ['ready', 'restoring'])))
      .orderBy(desc(archives.createdAt), desc(sql`${archives}.rowid`)).all() as CopiedArchive[]
  }

  /** The sites a manifest lists: every one not deleted. */
  sitesForManifest(): { id: string; slug: string; status: string }[] {
    return this.store.db.select({ id: sites.id, slug: sites.slug, status: sites.status }).from(sites)
      .where(notInArray(sites.status, ['deleted'])).orderBy(asc(sites.createdAt)).all()
  }

  /** A copied archive picked at random, for the restore drill. */
  randomCopiedArchive(): OffsiteCopyRow | undefined {
    return this.store.db.select().from(offsiteCopies)
      .where(and(eq(offsiteCopies.kind, 'archive'), eq(offsiteCopies.status, 'copied'))).orderBy(sql`random()`).limit(1).get()
  }

  /** Records what the restore drill found reading this copy back (null: it matched). */
  recordDrill(id: string, at: number, error: string | null): void {
    this.store.write(() => {
      this.store.db.update(offsiteCopies).set({ verifiedAt: at, verifyError: error }).where(eq(offsiteCopies.id, id)).run()
    })
  }

  /** The copy the restore drill read last. */
  lastDrilled(): OffsiteCopyRow | undefined {
    return this.store.db.select().from(offsiteCopies).where(isNotNull(offsiteCopies.verifiedAt)).orderBy(desc(offsiteCopies.verifiedAt)).limit(1).get()
  }

  /** How many copies wait, by kind and status (copied ones left out). */
  waiting(): { kind: OffsiteCopyKind; status: OffsiteCopyRow['status']; n: number }[] {
    return this.store.db.select({ kind: offsiteCopies.kind, status: offsiteCopies.status, n: sql<number>`count(*)` }).from(offsiteCopies)
      .where(ne(offsiteCopies.status, 'copied')).groupBy(offsiteCopies.kind, offsiteCopies.status).all()
  }

  /** The latest failure of a copy that still waits (pending or deleting). */
  lastFailure(): OffsiteCopyRow | undefined {
    return this.store.db.select().from(offsiteCopies)
      .where(and(ne(offsiteCopies.status, 'copied'), isNotNull(offsiteCopies.lastError)))
      .orderBy(desc(offsiteCopies.attemptedAt)).limit(1).get()
  }
}
