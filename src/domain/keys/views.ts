import { Type as t, type Static } from '@sinclair/typebox'
import { DateTime, Nullable, Uuid } from '../schema'
import { KeyRevokedSchema, ScopeSchema } from '../../core/enums'

export const ApiKeyCreated = t.Object({
  api_key: t.String({ description: 'The key itself: shown this once, never again. Format {prefix}_ followed by 48 hex characters.' }),
  key_id: Uuid(),
  prefix: t.String({ description: 'The first 12 characters of the key, shown in listings.' }),
  name: t.String(),
  scopes: t.Array(ScopeSchema),
  account_id: Uuid(),
  site_scoped: t.Boolean(),
  created_at: DateTime(),
})
export type ApiKeyCreated = Static<typeof ApiKeyCreated>

export const KeyListItem = t.Object({
  key_id: Uuid(),
  prefix: t.String(),
  name: t.String(),
  scopes: t.Array(ScopeSchema),
  site_scoped: t.Boolean(),
  status: t.Union([t.Literal('active'), ...KeyRevokedSchema.anyOf], { description: 'active, or why the key stopped working: revoked, or rotated (replaced by a new key).' }),
  created_at: DateTime(),
  last_used_at: Nullable(DateTime('Recorded in memory and written every 30 s, so it can lag by that much.')),
  revoked_at: Nullable(DateTime()),
})
export type KeyListItem = Static<typeof KeyListItem>
