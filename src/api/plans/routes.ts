import { Elysia } from 'elysia'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { serializedResponse } from '../http/envelope'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { Plan, PlanListQuery, PlanSlugParams } from './model'
import type { PlansService } from '../../domain/plans'
import { t } from 'elysia'

const PlanList = TypeCompiler.Compile(t.Array(Plan))
const checkedJson = new Set<string>()

/**
 * The catalog's cached JSON (PlansService.listJson). Cached bytes skip Elysia's per-response
 * check, so each distinct answer is checked against the route's schema once, here.
 */
export function checkedPlanList(plans: PlansService, filter: Parameters<PlansService['listJson']>[0] = {}): string {
  const json = plans.listJson(filter)
  if (!checkedJson.has(json)) {
    if (!PlanList.Check(JSON.parse(json))) throw new Error('GET /plans/ would answer data that does not match its schema')
    if (checkedJson.size > 100) checkedJson.clear()
    checkedJson.add(json)
  }
  return json
}

export const planRoutes = (plugins: ApiPlugins, plans: PlansService) =>
  new Elysia({ name: 'plans-routes' })
    .use(plugins)
    .get('/plans/', ({ query, set }) => {
      const json = checkedPlanList(plans, { track: query.track, includeDeprecated: query.include_deprecated })
      return serializedResponse(json, set.headers['x-request-id'] as string)
    }, {
      public: true,
      query: PlanListQuery,
      response: ok(t.Array(Plan)),
      detail: { tags: ['Plans'], summary: 'List the plans on sale', operationId: 'listPlans' },
    })
    .get('/plans/:plan_slug/', ({ params }) => plans.get(params.plan_slug), {
      public: true,
      params: PlanSlugParams,
      response: ok(Plan),
      errors: [404],
      detail: { tags: ['Plans'], summary: 'Get one plan (deprecated ones too)', operationId: 'getPlan' },
    })
