import { t } from 'elysia'
import { ScopeSchema } from '../../domain/enums'
import { Body, DateTime } from '../http/schemas'

export const ClaimRequestBody = Body({
  site_slug: t.String({ minLength: 1, maxLength: 100, description: 'The site whose files you can read.' }),
})

export const ClaimRequested = t.Object({
  site_slug: t.String(),
  token_path: t.String({ description: 'Where the token was written inside the site, relative to the site user\'s home (e.g. ~/.svc/.claim_token).' }),
  expires_at: DateTime('The token works once, until then (1 hour).'),
})

export const ClaimBody = Body({
  claim_token: t.String({ minLength: 1, maxLength: 200, description: 'The contents of the token file, without the trailing newline.' }),
})

export const ClaimedKey = t.Object({
  api_key: t.String({ description: 'Shown this once. Works only on /sites/{site_slug}/...' }),
  key_id: t.String({ format: 'uuid' }),
  site_slug: t.String(),
  site_scoped: t.Literal(true),
  scopes: t.Array(ScopeSchema),
})
