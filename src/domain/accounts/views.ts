import { Type as t, type Static } from '@sinclair/typebox'
import { Nullable } from '../schema'

/** The languages of Berth's pages; an account picks one (POST /account/update/). */
export const LanguageSchema = t.Union([t.Literal('en'), t.Literal('fr')], { description: "The language of Berth's pages (billing portal, receipts) for this account." })
export type Language = Static<typeof LanguageSchema>

/** The account as its owner sees it (POST /account/update/ answers it). */
export const AccountView = t.Object({
  id: t.String({ format: 'uuid' }),
  email: Nullable(t.String()),
  language: LanguageSchema,
  first_name: Nullable(t.String()),
  last_name: Nullable(t.String()),
  status: t.Literal('active'),
  payment_method: Nullable(t.Object({ label: t.String({ description: 'As the processor describes it, e.g. "visa ending 4242 (test)"; never a card number.' }) })),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})
export type AccountView = Static<typeof AccountView>

/** What DELETE /account/delete/ did. */
export const AccountDeleted = t.Object({
  id: t.String({ format: 'uuid' }),
  status: t.Literal('anonymized'),
  keys_revoked: t.Integer({ description: 'Every key of the account; each answers 401 from now on.' }),
  subscriptions_canceled: t.Array(t.String({ format: 'uuid' })),
  sites_scheduled_for_deletion: t.Array(t.Object({ slug: t.String(), deletion_scheduled_for: t.String({ format: 'date-time' }) })),
})
export type AccountDeleted = Static<typeof AccountDeleted>

/** The way into the processor's billing portal (GET /account/billing-portal/). */
export const BillingPortal = t.Object({
  url: t.String({ format: 'uri', description: 'Open it in a browser; it acts for the account until expires_at.' }),
  expires_at: t.String({ format: 'date-time' }),
  flow: t.String(),
  processor: t.String({ description: 'local (the built-in test-mode processor) or stripe.' }),
  test_mode: t.Boolean(),
})
export type BillingPortal = Static<typeof BillingPortal>
