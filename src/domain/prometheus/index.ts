/** The prometheus area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
import type { Store } from '../../store/store'
import { PrometheusRepository } from './repository'
export { EXPOSITION_CONTENT_TYPE } from './exposition'
export { scrapeMetrics } from './scrape'

/** The composition root's way to this area's repository, which stays the area's own (nothing imports ./repository from outside). */
export function makePrometheusRepository(store: Store): PrometheusRepository {
  return new PrometheusRepository(store)
}
