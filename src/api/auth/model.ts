import { t } from 'elysia'
import { KeyName, ScopeSchema } from '../keys/model'
import { Body, Nullable, Uuid } from '../http/schemas'

export const RegisterBody = Body({
  name: t.Optional(KeyName),
  email: t.Optional(t.String({ format: 'email', maxLength: 254, description: 'Optional contact address for the account.' })),
})

export const Whoami = t.Object({
  user: t.Object({ id: Uuid('The account id.'), email: Nullable(t.String()) }),
  api_key: t.Object({
    id: Uuid(),
    scopes: t.Array(ScopeSchema),
    site_scoped: t.Boolean(),
    site_slug: Nullable(t.String({ description: 'For a site-scoped key, the one site it works on.' })),
  }),
  account: t.Object({ sites: t.Integer(), active_subscriptions: t.Integer() }),
})
