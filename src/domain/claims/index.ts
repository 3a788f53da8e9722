/** The claims area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { ClaimsRepository } from './repository'
export { ClaimsService } from './service'
export { ClaimRequested, ClaimedKey } from './views'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeClaimsRepository(store: Store): ClaimsRepository {
  return new ClaimsRepository(store)
}
