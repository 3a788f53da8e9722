/** The audit area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { AuditRepository } from './repository'
export { commandLineOf } from './command-line'
export { AuditLog } from './service'
export type { AuditActor, AuditRecord, AuditTrail } from './trail'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeAuditRepository(store: Store): AuditRepository {
  return new AuditRepository(store)
}
