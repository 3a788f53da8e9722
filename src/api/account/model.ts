import { t } from 'elysia'
import { Body, checkedByService, Email, Query, Text, TEXT_PATTERN } from '../http/schemas'
import { PaymentView, SubscriptionView } from '../../domain/billing'
import { AccountDeleted, AccountView, BillingPortal, LanguageSchema as Language } from '../../domain/accounts'
export { AccountDeleted, AccountView, BillingPortal, PaymentView, SubscriptionView }

const PersonName = (what: string) => Text({ minLength: 1, maxLength: 100, description: what })

export const UpdateAccountBody = Body({
  email: t.Optional(Email({ description: 'Contact address for receipts and notices.', examples: ['ada@example.com'] })),
  language: t.Optional(Language),
  first_name: t.Optional(PersonName('Given name.')),
  last_name: t.Optional(PersonName('Family name.')),
}, { description: 'Send at least one field; those sent replace the current values.', ...checkedByService({ minProperties: 1 }) })

export const DeleteAccountBody = Body({
  // `error`: a missing or mistyped confirm must say what to send, as the service does for a wrong word.
  confirm: t.String({
    // `const` states the rule in the document; the request validator does not apply it to a
    // string, so a wrong word is the service's 422 naming confirm, as before.
    maxLength: 20, pattern: TEXT_PATTERN, const: 'DELETE', error: 'must be exactly "DELETE" (in capitals): deleting the account is irreversible',
    description: 'Must be exactly "DELETE": the deletion is irreversible.', examples: ['DELETE'],
  }),
})

export const BillingPortalQuery = Query({
  // `error`: the generic "must be one of , payment_method_update" hides the empty choice.
  flow: t.Optional(t.Union([t.Literal(''), t.Literal('payment_method_update')], {
    description: 'payment_method_update opens straight on the card form.',
    error: "must be payment_method_update (to open on the card form), or empty or left out for the portal's first page",
  })),
})
