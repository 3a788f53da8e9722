/** The metrics area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { MetricsRepository } from './repository'
export { SiteMetricsService } from './service'
export { MetricsDay, SiteMetrics } from './views'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makeMetricsRepository(store: Store): MetricsRepository {
  return new MetricsRepository(store)
}
