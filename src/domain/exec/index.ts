/** The exec area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { EXEC_LIMITS, execBodyLimit } from './limits'
export { ExecService } from './service'
export { ExecResult } from './views'
