/** The env area as others see it (docs/architecture.md, "Areas are modules"): a site's settings and secrets. */
import type { Store } from '../../store/store'
import { SiteEnvRepository } from './repository'
export { SiteEnvService, type SiteEnvChange } from './service'
export { SiteEnv, SiteEnvVariable, SiteEnvLimits, type SiteEnvView, type SiteEnvVariableView } from './views'
export { ENV_LIMITS, ENV_NAME_PATTERN, RESERVED_NAMES, RESERVED_PREFIXES } from './rules'
export { redact, SECRET_MASK } from './redact'

/** The composition root's way to this area's repository, which stays the area's own. */
export function makeSiteEnvRepository(store: Store): SiteEnvRepository {
  return new SiteEnvRepository(store)
}
