import type { SiteRow } from '../../store/schema'
import { conflict, notFound, op, say, type Message } from '../errors'
import type { Principal } from '../keys'
import type { SitesRepository } from './repository'
import { suspendedByAdmin } from './suspension'

/**
 * What a site operation needs of its site: `owned` (reads: the caller's, in any live state) or
 * `changeable` (changes and anything that needs the container: also not pending deletion,
 * provisioning, suspended or failed).
 */
export type SiteNeed = 'owned' | 'changeable'

const NOT_CHANGEABLE: Partial<Record<SiteRow['status'], (site: SiteRow) => Message>> = {
  pending_deletion: ({ slug }) => say`Site '${slug}' is scheduled for deletion; ${op('restoreSite', { tenant_slug: slug })} first.`,
  provisioning: ({ slug }) => say`Site '${slug}' is still being set up; retry when ${op('getSite', { tenant_slug: slug })} shows status active.`,
  suspended: (site) => suspendedByAdmin(site)
    ? say`Site '${site.slug}' is suspended by the hoster${site.suspendedReason ? ` (${site.suspendedReason})` : ''}; only the hoster can lift it.`
    : say`Site '${site.slug}' is suspended; settle its subscription (${op('listSubscriptions')}) first.`,
  failed: ({ slug }) => say`Site '${slug}' failed to provision; it cannot be changed. Buy a new one.`,
}

/**
 * Resolves the site of a request once, with its caller: each door calls it before the operation
 * (REST: the `site` declaration of a route), and the services take the site row it returns.
 * Another account's site answers exactly like a missing one (not_found, never forbidden: design.md).
 */
export class SiteGuard {
  constructor(private sites: Pick<SitesRepository, 'findOwned'>) {}

  require(p: Principal, slug: string, need: SiteNeed): SiteRow {
    const site = this.sites.findOwned(p.accountId, slug)
    if (!site) throw notFound(say`No site '${slug}' in your account; ${op('listSites')} lists yours.`, 'tenant_slug')
    return need === 'changeable' ? requireChangeable(site) : site
  }
}

/**
 * The site when its state lets it change, else conflict saying what to do. For services that check
 * again inside their own transaction, or later than the guard (scale checks its plan first).
 */
export function requireChangeable(site: SiteRow): SiteRow {
  const why = NOT_CHANGEABLE[site.status]
  if (why) throw conflict(why(site))
  return site
}
