import { Elysia } from 'elysia'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { Plan, PlanListQuery, PlanSlugParams } from './model'
import type { PlansService } from './service'
import { t } from 'elysia'

export const planRoutes = (plugins: ApiPlugins, plans: PlansService) =>
  new Elysia({ name: 'plans-routes' })
    .use(plugins)
    .get('/plans/', ({ query }) => plans.list({ track: query.track, includeDeprecated: query.include_deprecated }), {
      public: true,
      query: PlanListQuery,
      response: ok(t.Array(Plan)),
      detail: { tags: ['Plans'], summary: 'List the plans on sale', operationId: 'listPlans' },
    })
    .get('/plans/:plan_slug/', ({ params }) => plans.get(params.plan_slug), {
      public: true,
      params: PlanSlugParams,
      response: ok(Plan),
      detail: { tags: ['Plans'], summary: 'Get one plan (deprecated ones too)', operationId: 'getPlan' },
    })
