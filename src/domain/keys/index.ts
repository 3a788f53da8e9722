/** The keys area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { KeysService, sha256 } from './service'
export type { Principal } from './service'
export { ApiKeyCreated, KeyListItem } from './views'
export type { KeyRecords } from './records'
