import { t, type Static } from 'elysia'
import { Query } from '../http/schemas'
import { AiModuleSchema, HostingTypeSchema, TrackSchema as Track } from '../../core/enums'
import { Plan } from '../../domain/plans'
export { Plan }

export const PlanListQuery = Query({
  track: t.Optional(Track),
  include_deprecated: t.Optional(t.Boolean({ default: false, description: 'Also list deprecated plans.' })),
})

export const PlanSlugParams = t.Object({ plan_slug: t.String({ maxLength: 100 }) })
