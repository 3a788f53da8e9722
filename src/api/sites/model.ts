import { t } from 'elysia'
import { SLUG_PATTERN } from '../../core/slugs'
import { Body, DateTime, JsonInteger, Nullable, Text, Uuid } from '../http/schemas'
import { HostingTypeSchema } from '../../core/enums'
import { Site, SiteDetail } from '../../domain/sites'
export { Site, SiteDetail }

export const SiteParams = t.Object({ tenant_slug: t.String({ maxLength: 100 }) })

export const CreateSiteBody = Body({
  slug: t.String({ pattern: SLUG_PATTERN, minLength: 3, maxLength: 50, error: 'must be 3 to 50 lowercase letters, digits and hyphens, starting and ending with a letter or digit' }),
  subscription_id: t.Optional(Uuid('The agency subscription to add the site under; default: the first with room.')),
})

export const ScaleBody = Body({
  new_plan: Text({ minLength: 1, maxLength: 100, examples: ['business'], description: 'Slug of an active plan (GET /plans/); the site and its subscription move to it.' }),
})

/** Two years: the longest max-age the HSTS preload list asks for, and the most a site may set. */
export const HSTS_MAX_AGE_MAX = 63_072_000

export const SiteSettingsBody = Body({
  hsts_max_age: Nullable(JsonInteger({
    minimum: 0,
    maximum: HSTS_MAX_AGE_MAX,
    description: `Strict-Transport-Security max-age in seconds, 0 to ${HSTS_MAX_AGE_MAX} (two years), sent on the site's answers over HTTPS; browsers then refuse plain HTTP for the site's name that long. null turns HSTS off (the default); 0 tells browsers that saw it to forget it.`,
  })),
})
