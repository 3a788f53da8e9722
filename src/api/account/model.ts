import { t } from 'elysia'
import { Body, checkedByService, JsonInteger, Nullable, Query, Text, TEXT_PATTERN } from '../http/schemas'
import { PaymentView, SubscriptionView } from '../../domain/billing/views'
export { PaymentView, SubscriptionView }

const Language = t.Union([t.Literal('en'), t.Literal('fr')], { description: "The language of Berth's pages (billing portal, receipts) for this account." })
const PersonName = (what: string) => Text({ minLength: 1, maxLength: 100, description: what })

export const UpdateAccountBody = Body({
  email: t.Optional(Text({ format: 'email', maxLength: 254, description: 'Contact address for receipts and notices.', examples: ['ada@example.com'] })),
  language: t.Optional(Language),
  first_name: t.Optional(PersonName('Given name.')),
  last_name: t.Optional(PersonName('Family name.')),
}, { description: 'Send at least one field; those sent replace the current values.', ...checkedByService({ minProperties: 1 }) })

export const DeleteAccountBody = Body({
  // `error`: a missing or mistyped confirm must say what to send, as the service does for a wrong word.
  confirm: t.String({
    maxLength: 20, pattern: TEXT_PATTERN, error: 'must be exactly "DELETE" (in capitals): deleting the account is irreversible',
    description: 'Must be exactly "DELETE": the deletion is irreversible.', examples: ['DELETE'],
  }),
})

export const Account = t.Object({
  id: t.String({ format: 'uuid' }),
  email: Nullable(t.String()),
  language: Language,
  first_name: Nullable(t.String()),
  last_name: Nullable(t.String()),
  status: t.Literal('active'),
  payment_method: Nullable(t.Object({ label: t.String({ description: 'As the processor describes it, e.g. "visa ending 4242 (test)"; never a card number.' }) })),
  created_at: t.String({ format: 'date-time' }),
  updated_at: t.String({ format: 'date-time' }),
})

export const AccountDeleted = t.Object({
  id: t.String({ format: 'uuid' }),
  status: t.Literal('anonymized'),
  keys_revoked: JsonInteger({ description: 'Every key of the account; each answers 401 from now on.' }),
  subscriptions_canceled: t.Array(t.String({ format: 'uuid' })),
  sites_scheduled_for_deletion: t.Array(t.Object({ slug: t.String(), deletion_scheduled_for: t.String({ format: 'date-time' }) })),
})

export const BillingPortalQuery = Query({
  // `error`: the generic "must be one of , payment_method_update" hides the empty choice.
  flow: t.Optional(t.Union([t.Literal(''), t.Literal('payment_method_update')], {
    description: 'payment_method_update opens straight on the card form.',
    error: "must be payment_method_update (to open on the card form), or empty or left out for the portal's first page",
  })),
})

export const BillingPortal = t.Object({
  url: t.String({ format: 'uri', description: 'Open it in a browser; it acts for the account until expires_at.' }),
  expires_at: t.String({ format: 'date-time' }),
  flow: t.String(),
  processor: t.String({ description: 'local (the built-in test-mode processor) or stripe.' }),
  test_mode: t.Boolean(),
})
