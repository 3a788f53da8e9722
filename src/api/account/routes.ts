import { Elysia, t } from 'elysia'
import type { AccountsService } from '../../domain/accounts'
import type { SubscriptionBilling } from '../../domain/billing'
import { ok } from '../http/schemas'
import type { ApiPlugins } from '../plugins'
import { AccountDeleted, AccountView, BillingPortal, BillingPortalQuery, DeleteAccountBody, PaymentView, SubscriptionView, UpdateAccountBody } from './model'

const tags = ['Account']

export const accountRoutes = (plugins: ApiPlugins, accounts: AccountsService, subscriptions: SubscriptionBilling) =>
  new Elysia({ name: 'account-routes' })
    .use(plugins)
    .post('/account/update/', ({ principal, body }) => accounts.update(principal, body), {
      scope: 'admin',
      body: UpdateAccountBody,
      response: ok(AccountView),
      detail: { tags, summary: "Update the account's email, language or names", operationId: 'updateAccount' },
    })
    .delete('/account/delete/', ({ principal, body }) => accounts.delete(principal, body.confirm), {
      scope: 'admin',
      body: DeleteAccountBody,
      response: ok(AccountDeleted),
      errors: [409],
      detail: { tags, summary: 'Delete the account for good: keys revoked, subscriptions canceled, sites scheduled for deletion', operationId: 'deleteAccount' },
    })
    .get('/account/subscriptions/', ({ principal }) => subscriptions.list(principal.accountId), {
      scope: 'read',
      response: ok(t.Array(SubscriptionView)),
      detail: { tags, summary: 'Your subscriptions with their plans, periods, renewal state and sites', operationId: 'listSubscriptions' },
    })
    .get('/account/payments/', ({ principal }) => subscriptions.payments(principal.accountId), {
      scope: 'read',
      response: ok(t.Array(PaymentView)),
      detail: { tags, summary: 'Your payments, newest first: purchases, renewals (declined ones too), prorations and domains, with what each paid for', operationId: 'listPayments' },
    })
    .get('/account/billing-portal/', ({ principal, query }) => accounts.billingPortal(principal, query.flow ?? ''), {
      scope: 'admin',
      query: BillingPortalQuery,
      response: ok(BillingPortal),
      errors: [503],
      detail: { tags, summary: "A link to the payment processor's billing portal: card on file, payments and receipts, cancel", operationId: 'getBillingPortal' },
    })
