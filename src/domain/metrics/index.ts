/** The metrics area as others see it (docs/architecture.md, "Areas are modules"): every name another area, a door or the composition root uses of it. */
export { SiteMetricsService } from './service'
export { MetricsDay, SiteMetrics } from './views'
