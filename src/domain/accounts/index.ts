/** The accounts area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { AccountsRepository } from './repository'
export { AccountAdmin } from './admin'
export type { AdminAccountView } from './admin'
export { AccountsService } from './service'
export { AccountDeleted, AccountView, BillingPortal, LanguageSchema } from './views'
export type { AccountCounts, AccountRecords } from './records'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeAccountsRepository(store: Store): AccountsRepository {
  return new AccountsRepository(store)
}
