/** The plans area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Clock } from '../../lib/clock'
import type { Store } from '../../store/store'
import { PlansRepository } from './repository'
export { PlansService } from './service'
export { Plan } from './views'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makePlansRepository(store: Store, clock: Clock): PlansRepository {
  return new PlansRepository(store, clock)
}
