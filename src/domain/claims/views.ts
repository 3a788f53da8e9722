import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime } from '../schema'
import { ScopeSchema } from '../../core/enums'

export const ClaimRequested = t.Object({
  site_slug: t.String(),
  token_path: t.String({ description: 'Where the token was written inside the site, relative to the site user\'s home (e.g. ~/.svc/.claim_token).' }),
  expires_at: DateTime('The token works once, until then (1 hour).'),
})

export const ClaimedKey = t.Object({
  api_key: t.String({ description: 'Shown this once. Works only on /sites/{site_slug}/...' }),
  key_id: t.String({ format: 'uuid' }),
  site_slug: t.String(),
  site_scoped: t.Literal(true),
  scopes: t.Array(ScopeSchema),
})
export type ClaimRequestedView = Static<typeof ClaimRequested>
export type ClaimedKeyView = Static<typeof ClaimedKey>
