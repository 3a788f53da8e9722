import { t, type Static } from 'elysia'
import { ScopeSchema } from '../../domain/enums'
import { Body, DateTime, Nullable, Query, Uuid } from '../http/schemas'

export { SCOPES, ScopeSchema, type Scope } from '../../domain/enums'

const KeyName = t.String({ minLength: 1, maxLength: 100, description: 'A label for the key, shown in listings.' })

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
  status: t.Union([t.Literal('active'), t.Literal('revoked'), t.Literal('rotated')]),
  created_at: DateTime(),
  last_used_at: Nullable(DateTime('Recorded in memory and written every 30 s, so it can lag by that much.')),
  revoked_at: Nullable(DateTime()),
})
export type KeyListItem = Static<typeof KeyListItem>

export const CreateKeyBody = Body({
  name: t.Optional(KeyName),
  scopes: t.Optional(t.Array(ScopeSchema, { description: "Defaults to the calling key's scopes; must be a subset of them." })),
})

export const KeyListQuery = Query({
  include_revoked: t.Optional(t.Boolean({ default: false, description: 'Also list revoked and rotated keys.' })),
})

export const KeyIdParams = t.Object({ key_id: Uuid() })

export { KeyName }
