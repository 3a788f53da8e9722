/** The domains area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { DomainsRepository } from './repository'
export { CA_LEGAL_TYPES } from './names'
export { DomainRegistration, REGISTER_DOMAIN_JOB } from './registration'
export { DomainRenewals } from './renewals'
export { DomainsService } from './service'
export { DomainEvents } from './domain-events'
export { Domain, DomainRegistered, DomainSearch } from './views'
export type { DomainRecords } from './records'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeDomainsRepository(store: Store): DomainsRepository {
  return new DomainsRepository(store)
}
