/** The logs area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { EdgeAccessLog } from './access-log'
export { LogsService } from './service'
export { LogRotation } from './rotation'
export { edgeWritesAccessLog } from './sources'
export { LogTypeSchema, SiteLog } from './views'
