import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { SiteParams } from '../sites/model'
import { MetricsQuery, SiteMetrics } from './model'
import type { SiteMetricsService } from '../../domain/metrics'

export const metricsRoutes = (plugins: ApiPlugins, metrics: SiteMetricsService) =>
  new Elysia({ name: 'metrics-routes' })
    .use(plugins)
    .get('/sites/:tenant_slug/metrics/', ({ site, query }) => metrics.get(site, query.days), {
      scope: 'read',
      site: 'owned',
      params: SiteParams,
      query: MetricsQuery,
      response: ok(SiteMetrics),
      detail: { tags: ['Metrics'], summary: 'Traffic per UTC day (counted by the edge) and current resource use', operationId: 'getSiteMetrics' },
    })
