import { t, type Static } from 'elysia'
import { ScopeSchema } from '../../core/enums'
import { Body, DateTime, Nullable, Query, Text, Uuid } from '../http/schemas'
import { ApiKeyCreated, KeyListItem } from '../../domain/keys'
export { ApiKeyCreated, KeyListItem }

export const KeyName = Text({ minLength: 1, maxLength: 100, description: 'A label for the key, shown in listings.' })

export const CreateKeyBody = Body({
  name: t.Optional(KeyName),
  scopes: t.Optional(t.Array(ScopeSchema, { minItems: 1, description: "Defaults to the calling key's scopes; must be a subset of them." })),
})

export const KeyListQuery = Query({
  include_revoked: t.Optional(t.Boolean({ default: false, description: 'Also list revoked and rotated keys.' })),
})

export const KeyIdParams = t.Object({ key_id: Uuid() })
