/** The dns area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { DnsRepository } from './repository'
export { TTL_DEFAULT, TTL_MAX, TTL_MIN, TXT_MAX_BYTES } from './records'
export type { RecordInput } from './records'
export { DnsService } from './service'
export { DnsChange, DnsRecord, DnsZoneView } from './views'
export type { DnsChangeView, DnsRecordView, DnsZone } from './views'
export { ZoneBook, inZone } from './zones'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeDnsRepository(store: Store): DnsRepository {
  return new DnsRepository(store)
}
