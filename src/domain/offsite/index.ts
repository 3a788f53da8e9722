/** The offsite area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { OffsiteCopiesRepository } from './repository'
export { BoxCopies } from './box-copy'
export { OffsiteCopier } from './copier'
export type { OffsiteStep } from './copier'
export { RestoreDrill } from './drill'
export { ArchiveFetchBack } from './fetch-back'
export type { ArchiveBytes, ArchiveSource } from './fetch-back'
export type { BoxIdentity, SigningKey } from './ports'
export { BoxRestore, RestoreRefusedError, formatSpan } from './restore'
export type { ArchiveLanding, Received } from './restore'
export { SitesReturn } from './restore-sites'
export type { SiteOutcome } from './restore-sites'
export { checkPublicKey, newSigningKey, publicKeyOf } from './signing'
export { lastStoreCopyAgeSeconds, offsiteStatus, offsiteStatusIn } from './status'
export type { OffsiteStatus } from './status'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeOffsiteCopiesRepository(store: Store): OffsiteCopiesRepository {
  return new OffsiteCopiesRepository(store)
}
