/** The archives area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { ArchiveEvents } from './events'
export { CREATE_ARCHIVE_JOB, CreateArchiveJob, RESTORE_ARCHIVE_JOB, RestoreArchiveJob, workFile } from './jobs'
export type { ArchiveJobDeps } from './jobs'
export { RestoreGuard } from './restore-guard'
export { ArchiveRetention } from './retention'
export { ArchivesService } from './service'
export type { HomeTarballs, WorkFolder } from './tarballs'
export { Archive } from './views'
