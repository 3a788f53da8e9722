import type { ArchiveRow } from '../../store/schema'
import type { StoredArchiveKind } from '../../core/enums'

/** snapshot and backup (the API's), deployment (a deployment's files: domain/deployments/files.ts). */
export type ArchiveKind = StoredArchiveKind
/**
 * `creating` (the job is making it), `ready`, `restoring` (a restore job is putting it back on
 * the site; `ready` again after), `failed` (never made; `error` says why), `deleted` (being
 * removed: the row goes once its file is gone).
 */
export type ArchiveStatus = 'creating' | 'ready' | 'restoring' | 'failed' | 'deleted'

/**
 * What other areas read and write of the archives (through this area's index.ts): the methods of
 * ArchivesRepository they use, which implements it. The repository itself is this area's own; a
 * consumer takes a Pick of this, the composition root hands it the repository.
 */
export interface ArchiveRecords {
  insert(row: { id: string; siteId: string; kind: ArchiveKind; storageKey: string; createdAt: number }): ArchiveRow
  find(id: string): ArchiveRow | undefined
  /** Sets fields when the row still has status `from`; true when it did. */
  transition(id: string, from: ArchiveStatus[], changes: Partial<Omit<ArchiveRow, 'id' | 'siteId' | 'kind' | 'status'>> & { status: ArchiveStatus }): boolean
  /** Newest first; deleted ones left out. */
  listOf(siteId: string, kind: ArchiveKind): ArchiveRow[]
  /** The archive being restored onto the site, if any (at most one: restore() refuses a second). */
  restoringOf(siteId: string): ArchiveRow | undefined
  /** Rows with one of `statuses`, oldest first. */
  withStatus(statuses: ArchiveStatus[], kind?: ArchiveKind): ArchiveRow[]
}
