/** The keys area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { KeysRepository } from './repository'
export { KeysService, sha256 } from './service'
export type { Principal } from './service'
export { ApiKeyCreated, KeyListItem } from './views'
export type { KeyRecords } from './records'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeKeysRepository(store: Store): KeysRepository {
  return new KeysRepository(store)
}
