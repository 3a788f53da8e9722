import { Elysia } from 'elysia'
import { NoBody, ok } from '../http/schemas'
import { checkoutSecretOf as secretOf } from '../http/access'
import type { ApiPlugins } from '../plugins'
import { CheckoutParams, CheckoutSecretQuery, CheckoutSession, CompleteCheckoutBody, createCheckoutBody, UpdateCheckoutBody } from './model'
import type { CheckoutService } from '../../domain/checkout'


const tags = ['Checkout']

/** `prefix`: the brand's prefix of SKUs (config brand.prefix). */
export const checkoutRoutes = (plugins: ApiPlugins, checkout: CheckoutService, prefix: string) =>
  new Elysia({ name: 'checkout-routes' })
    .use(plugins)
    .post('/acp/checkouts/', ({ body, caller, set }) => {
      set.status = 201
      return checkout.create(body, caller)
    }, {
      // No key is needed; one that is sent must be a valid account key with admin (buying is
      // money), and then the site joins its account.
      public: true,
      optionalScope: 'admin',
      rateLimit: 'checkout_create',
      body: createCheckoutBody(prefix),
      response: ok(CheckoutSession, 201),
      errors: [507],
      detail: { tags, summary: 'Create a checkout session for a SKU (a bearer key is optional)', operationId: 'createCheckout' },
    })
    .get('/acp/checkouts/:checkout_id/', ({ params, request }) => checkout.get(params.checkout_id, secretOf(request)), {
      public: true,
      checkoutSecret: true,
      rateLimit: 'checkout_poll',
      params: CheckoutParams,
      query: CheckoutSecretQuery,
      response: ok(CheckoutSession),
      errors: [404],
      detail: { tags, summary: 'Poll a checkout session; the first poll after payment carries api_key once', operationId: 'getCheckout' },
    })
    .post('/acp/checkouts/:checkout_id/update/', ({ params, request, body }) => checkout.update(params.checkout_id, secretOf(request), body), {
      public: true,
      checkoutSecret: true,
      params: CheckoutParams,
      query: CheckoutSecretQuery,
      body: UpdateCheckoutBody,
      response: ok(CheckoutSession),
      errors: [404, 409, 507],
      detail: { tags, summary: 'Set buyer_email and requested_slug (ready once the slug is set)', operationId: 'updateCheckout' },
    })
    .post('/acp/checkouts/:checkout_id/complete/', async ({ params, request, body, set }) => {
      const view = await checkout.complete(params.checkout_id, secretOf(request), body)
      // 201: the payment went through and the site is being made; 200: the hosted page awaits it.
      set.status = view.status === 'completed' ? 201 : 200
      return view
    }, {
      public: true,
      checkoutSecret: true,
      params: CheckoutParams,
      query: CheckoutSecretQuery,
      body: CompleteCheckoutBody,
      response: { ...ok(CheckoutSession), ...ok(CheckoutSession, 201) },
      // 503: the payment processor cannot be reached (nothing charged).
      errors: [402, 404, 409, 503, 507],
      detail: { tags, summary: 'Pay: 200 with a hosted payment URL, or 201 completed for a direct payment', operationId: 'completeCheckout' },
    })
    .post('/acp/checkouts/:checkout_id/cancel/', ({ params, request }) => checkout.cancel(params.checkout_id, secretOf(request)), {
      public: true,
      checkoutSecret: true,
      params: CheckoutParams,
      query: CheckoutSecretQuery,
      body: NoBody,
      response: ok(CheckoutSession),
      errors: [404, 409],
      detail: { tags, summary: 'Cancel an unpaid session', operationId: 'cancelCheckout' },
    })
