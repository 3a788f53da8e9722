/** The billing area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import { BillingRepository } from './repository'
import type { Clock } from '../../lib/clock'
import type { Store } from '../../store/store'
import { LocalLedgerStore } from './local-ledger-repository'
export { Charges } from './charges'
export type { Approved } from './charges'
export { SubscriptionEvents } from './events'
export type { SubscriptionEvent, SubscriptionReaction } from './events'
export { PortalLinks } from './portal-links'
export { BillingService } from './service'
export { SubscriptionBilling } from './subscriptions'
export { PaymentView, SubscriptionView } from './views'
export type { BillingRecords } from './records'

/** The built-in processor's ledger over the store, for the composition root (the repository stays this area's own). */
export function makeLocalLedgerStore(store: Store, clock: Clock): LocalLedgerStore {
  return new LocalLedgerStore(store, clock)
}

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeBillingRepository(store: Store): BillingRepository {
  return new BillingRepository(store)
}
