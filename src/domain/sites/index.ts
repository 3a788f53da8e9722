/** The sites area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { SitesRepository, type SshPortPolicy } from './repository'
export { MAX_REASON_LENGTH, SiteAdmin, applyLifted, reasonOf } from './admin'
export type { AdminSiteView } from './admin'
export { AdminShell } from './admin-shell'
export { APPLY_JOBS, ApplySiteJob } from './apply'
export { SiteAvailability } from './availability'
export { SiteChanges } from './changes'
export { SiteDirectory } from './directory'
export { DISK_WARNING_RATIO, SiteDiskCache, bytesText, diskFigures, diskFull, diskTooSmall, diskWarning, hookOutOfSpace, noRoomFor } from './disk'
export type { DiskFigures, SiteWarning } from './disk'
export { SiteGuard, requireChangeable } from './guard'
export type { SiteNeed } from './guard'
export { SiteHealer } from './healer'
export { DELETION_GRACE_MS, SiteLifecycle } from './lifecycle'
export { PROVISION_JOB, Provisioner } from './provisioning'
export { SiteReaper } from './reaper'
export type { SiteDataPurger } from './reaper'
export { Reconciler } from './reconciler'
export { RepairBackoff } from './repair-backoff'
export { SiteRunner } from './runner'
export { SitesService } from './service'
export type { SitesServiceDeps } from './service'
export { SubscriptionSites } from './subscription-sites'
export { liftedState } from './suspension'
export { Site, SiteDetail } from './views'
export type { SiteAppView, SiteDatabaseView, SiteDetailView, SiteView } from './views'
export type { SiteRecords } from './records'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeSitesRepository(store: Store, ssh: SshPortPolicy): SitesRepository {
  return new SitesRepository(store, ssh)
}
