/** The checkout area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { CheckoutRepository } from './repository'
export { HostedSessions } from './hosted-sessions'
export { CheckoutService } from './service'
export { CheckoutSession } from './views'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeCheckoutRepository(store: Store): CheckoutRepository {
  return new CheckoutRepository(store)
}
