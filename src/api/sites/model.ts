import { t } from 'elysia'
import { SLUG_PATTERN } from '../../domain/slugs'
import { Body, DateTime, Nullable, Uuid } from '../http/schemas'
import { HostingTypeSchema } from '../../domain/enums'

export const Site = t.Object({
  slug: t.String({ description: 'Also the {tenant_slug} of /sites/{tenant_slug}/... routes.' }),
  plan: t.String(),
  hosting_type: HostingTypeSchema,
  status: t.Union([t.Literal('provisioning'), t.Literal('active'), t.Literal('suspended'), t.Literal('pending_deletion'), t.Literal('failed')]),
  url: t.String({ description: 'Where the site answers: http(s)://{slug}.{sites_domain}.' }),
  domains: t.Array(t.String(), { description: 'Custom domains linked to the site.' }),
  modules: t.Record(t.String(), t.Boolean(), { description: 'AI modules the plan includes, each with whether it is on.' }),
  resources: t.Object({ memory_mb: t.Integer(), cpu_cores: t.Integer(), disk_gb: t.Integer() }),
  subscription_id: Nullable(Uuid()),
  created_at: DateTime(),
  error: Nullable(t.String({ description: 'Why provisioning failed, for failed sites.' })),
  deletion_scheduled_for: Nullable(DateTime()),
})

export const SiteParams = t.Object({ tenant_slug: t.String({ maxLength: 100 }) })

export const CreateSiteBody = Body({
  slug: t.String({ pattern: SLUG_PATTERN, minLength: 3, maxLength: 50, error: 'must be 3 to 50 lowercase letters, digits and hyphens, starting and ending with a letter or digit' }),
  subscription_id: t.Optional(Uuid('The agency subscription to add the site under; default: the first with room.')),
})

export const ScaleBody = Body({
  new_plan: t.String({ minLength: 1, maxLength: 100, description: 'Slug of an active plan (GET /plans/); the site and its subscription move to it.' }),
})
