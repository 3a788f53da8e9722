/** The files area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { FILE_LIMITS, fileBodyLimit } from './limits'
export { FilesService } from './service'
export { DeletedEntry, FileContent, FileEntry, FileListing, WrittenEntry } from './views'
