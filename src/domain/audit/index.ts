/** The audit area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { commandLineOf } from './command-line'
export { AuditLog } from './service'
export type { AuditActor, AuditRecord, AuditTrail } from './trail'
