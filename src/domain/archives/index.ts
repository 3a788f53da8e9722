/** The archives area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { ArchivesRepository } from './repository'
export { ArchiveEvents } from './events'
export { CREATE_ARCHIVE_JOB, CreateArchiveJob, RESTORE_ARCHIVE_JOB, RestoreArchiveJob, workFile } from './jobs'
export type { ArchiveJobDeps } from './jobs'
export { RestoreGuard } from './restore-guard'
export { ArchiveRetention } from './retention'
export { ArchivesService } from './service'
export type { DumpFiles, HomeTarballs, WorkFolder } from './tarballs'
export { ArchiveDumpReader, ArchiveDumps, type ArchiveDatabases, type DumpEntry, type DumpManifest, type OpenDump } from './dumps'
export { Archive } from './views'
export type { ArchiveRecords } from './records'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeArchivesRepository(store: Store): ArchivesRepository {
  return new ArchivesRepository(store)
}
export { BackupEvents } from './backup-events'
