import { Type as t, type Static } from '@sinclair/typebox'
import { Nullable, Uuid } from '../schema'
import { ScopeSchema } from '../../core/enums'

export const Whoami = t.Object({
  user: t.Object({
    id: Uuid('The account id.'),
    email: Nullable(t.String()),
    language: t.Union([t.Literal('en'), t.Literal('fr')], { description: "The language of Berth's pages (billing portal, receipts) for this account." }),
    first_name: Nullable(t.String()),
    last_name: Nullable(t.String()),
  }),
  api_key: t.Object({
    id: Uuid(),
    scopes: t.Array(ScopeSchema),
    site_scoped: t.Boolean(),
    site_slug: Nullable(t.String({ description: 'For a site-scoped key, the one site it works on.' })),
  }),
  account: t.Object({ sites: t.Integer(), active_subscriptions: t.Integer() }),
})
export type WhoamiView = Static<typeof Whoami>
